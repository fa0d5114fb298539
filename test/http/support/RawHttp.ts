/**
 * HTTP/1.1 over a raw `net` socket, for tests of socket-level behaviour (keep-alive, `Connection: close`, resets,
 * timeouts, connection caps) that `fetch` hides: the test writes the bytes itself, reads each response as it
 * comes, and sees whether and how the server closed the socket.
 */
import * as net from "node:net"

/** One response as read from the socket. */
export interface RawResponse {
  readonly status: number
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A client connection. */
export interface RawConnection {
  readonly socket: net.Socket
  /** Writes bytes as they are. */
  readonly write: (text: string) => void
  /** The next response on the connection (a `Content-Length` body, or none); rejects if the socket closes first. */
  readonly next: () => Promise<RawResponse>
  /** Resolves once the socket has closed, with the error that ended it if any (e.g. `ECONNRESET`). */
  readonly closed: Promise<{ readonly error: string | undefined }>
  /** Whether it has closed. */
  readonly isClosed: () => boolean
  readonly destroy: () => void
}

/** Connects to `port` on 127.0.0.1 (from `localAddress` if given); resolves once connected. */
export const connect = (port: number, options: { readonly localAddress?: string; readonly host?: string } = {}): Promise<RawConnection> =>
  new Promise((resolve, reject) => {
    const socket = net.connect({ host: options.host ?? "127.0.0.1", port, ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }) })
    let buffer = Buffer.alloc(0)
    let closedFlag = false
    let error: string | undefined
    const waiters: Array<() => void> = []
    const wake = () => waiters.splice(0).forEach((w) => w())
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      wake()
    })
    socket.on("error", (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message
    })
    const closed = new Promise<{ readonly error: string | undefined }>((done) =>
      socket.once("close", () => {
        closedFlag = true
        wake()
        done({ error })
      })
    )
    /** A complete response at the start of the buffer, taken out of it. */
    const take = (): RawResponse | undefined => {
      const end = buffer.indexOf("\r\n\r\n")
      if (end === -1) return undefined
      const [statusLine, ...lines] = buffer.subarray(0, end).toString("latin1").split("\r\n")
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = Number(headers["content-length"] ?? 0)
      if (buffer.length < end + 4 + length) return undefined
      const body = buffer.subarray(end + 4, end + 4 + length).toString("utf8")
      buffer = buffer.subarray(end + 4 + length)
      return { status: Number(statusLine!.split(" ")[1]), headers, body }
    }
    const next = () =>
      new Promise<RawResponse>((ok, fail) => {
        const attempt = () => {
          const response = take()
          if (response !== undefined) return ok(response)
          if (closedFlag) return fail(new Error(`socket closed (${error ?? "by the server"}) before a whole response`))
          waiters.push(attempt)
        }
        attempt()
      })
    let connected = false
    socket.once("connect", () => {
      connected = true
      resolve({
        socket,
        write: (text) => void socket.write(text),
        next,
        closed,
        isClosed: () => closedFlag,
        destroy: () => socket.destroy()
      })
    })
    socket.once("error", (e) => {
      if (!connected) reject(e)
    })
  })

/** A request's text: `method path`, headers (Host added), and a body with its `Content-Length` unless told otherwise. */
export const requestText = (
  method: string,
  path: string,
  headers: Readonly<Record<string, string>> = {},
  body?: string
): string => {
  const all: Record<string, string> = { host: "localhost", ...headers }
  if (body !== undefined && all["content-length"] === undefined && all["transfer-encoding"] === undefined) {
    all["content-length"] = String(Buffer.byteLength(body))
  }
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body ?? ""}`
}
