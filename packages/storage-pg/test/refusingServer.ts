/**
 * A fake PostgreSQL server on 127.0.0.1 that refuses every connection the way a real one does when it cannot
 * serve: it reads the startup message and answers one `ErrorResponse` (severity FATAL, the given SQLSTATE and
 * message), then closes. An `SSLRequest` first is answered `N` (no TLS), as PostgreSQL without TLS does.
 */
import * as net from "node:net"

/** A running fake server. */
export interface RefusingServer {
  readonly port: number
  /** How many startup messages it has refused. */
  readonly refused: () => number
  readonly close: () => Promise<void>
}

/** The `ErrorResponse` backend message: `E`, int32 length, then (field type, C string) pairs, then a 0. */
export const errorResponse = (fields: Readonly<Record<string, string>>): Buffer => {
  const body = Buffer.concat([
    ...Object.entries(fields).map(([type, value]) => Buffer.concat([Buffer.from(type, "ascii"), Buffer.from(`${value}\0`, "utf8")])),
    Buffer.from([0])
  ])
  const header = Buffer.alloc(5)
  header[0] = 0x45
  header.writeInt32BE(4 + body.length, 1)
  return Buffer.concat([header, body])
}

const SSL_REQUEST = 80877103

/** Starts a server refusing every startup with `sqlState` and `message`. */
export const startRefusingServer = async (sqlState: string, message: string): Promise<RefusingServer> => {
  const sockets = new Set<net.Socket>()
  let refused = 0
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
    socket.on("error", () => {})
    let pending = Buffer.alloc(0)
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      // Startup-phase packets have no type byte: int32 length (itself included), then int32 code.
      while (pending.length >= 8 && pending.length >= pending.readInt32BE(0)) {
        const length = pending.readInt32BE(0)
        const code = pending.readInt32BE(4)
        pending = pending.subarray(length)
        if (code === SSL_REQUEST) {
          socket.write("N")
          continue
        }
        refused++
        socket.end(errorResponse({ S: "FATAL", V: "FATAL", C: sqlState, M: message }))
        return
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the fake server has no TCP address")
  return {
    port: address.port,
    refused: () => refused,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
