/**
 * Test helpers that speak the PostgreSQL wire protocol to a PgliteBridge socket directly.
 */
import { PGlite } from "@electric-sql/pglite"
import * as PgProtocol from "@effect/sql-pg/PgProtocol"
import { Effect, Result } from "effect"
import type { Duplex } from "node:stream"
import { PgliteTemplate } from "@lm/storage-pg"

/** An empty PGlite database in memory, from the template. */
export const openDb = async (): Promise<{ readonly db: PGlite; readonly close: () => Promise<void> }> => {
  const db = await PGlite.create({ loadDataDir: await Effect.runPromise(PgliteTemplate.templateTarball) })
  return { db, close: () => db.close() }
}

const copy = (bytes: Uint8Array): Buffer => Buffer.from(bytes)
const ok = <A>(result: Result.Result<A, unknown>): A => Result.getOrThrow(result)

/** Frontend messages. */
export const msg = {
  startup: () => copy(PgProtocol.encodeStartupMessage({ user: "postgres", database: "postgres" })),
  sslRequest: () => copy(PgProtocol.encodeSslRequest()),
  cancelRequest: () => copy(PgProtocol.encodeCancelRequest({ pid: 1, secret: 2 })),
  /** A simple-query (`Q`) message. */
  query: (sql: string) => {
    const text = Buffer.from(sql, "utf8")
    const message = Buffer.alloc(6 + text.length)
    message[0] = 0x51
    message.writeInt32BE(5 + text.length, 1)
    text.copy(message, 5)
    return message
  },
  parse: (query: string, parameterTypes: ReadonlyArray<number> = []) =>
    copy(ok(PgProtocol.encodeParse({ name: "", query, parameterTypes }))),
  bind: (parameters: ReadonlyArray<Uint8Array | null> = []) =>
    copy(ok(PgProtocol.encodeBind({ portal: "", statement: "", parameters }))),
  describePortal: () => copy(PgProtocol.encodeDescribe({ target: "portal", name: "" })),
  execute: () => copy(PgProtocol.encodeExecute({ portal: "", maxRows: 0 })),
  sync: () => copy(PgProtocol.encodeSync()),
  terminate: () => copy(PgProtocol.encodeTerminate())
}

/** A 4-byte big-endian int4 parameter (binary format). */
export const int4 = (value: number): Uint8Array => {
  const bytes = Buffer.alloc(4)
  bytes.writeInt32BE(value)
  return bytes
}

/** Everything the socket sends until it ends. */
export const readAll = (socket: Duplex): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.once("end", () => resolve(Buffer.concat(chunks)))
    socket.once("error", reject)
  })

/** Backend messages received until `count` messages tagged `tag` have arrived. */
export const readUntil = (
  socket: Duplex,
  tag: PgProtocol.BackendMessage["_tag"],
  count = 1
): Promise<Array<PgProtocol.BackendMessage>> =>
  new Promise((resolve, reject) => {
    const parser = PgProtocol.makeParser()
    const messages: Array<PgProtocol.BackendMessage> = []
    let seen = 0
    const onData = (chunk: Buffer) => {
      for (const message of parser.push(chunk)) {
        messages.push(message)
        if (message._tag === tag && ++seen === count) {
          socket.off("data", onData)
          resolve(messages)
        }
      }
    }
    socket.on("data", onData)
    socket.once("error", reject)
    socket.once("end", () => reject(new Error(`ended after ${seen} of ${count} ${tag}`)))
  })

/** Backend messages received until `count` ReadyForQuery messages have arrived. */
export const readReady = (socket: Duplex, count: number) => readUntil(socket, "ReadyForQuery", count)

/** Parses a whole backend byte stream. */
export const parseAll = (bytes: Uint8Array): Array<PgProtocol.BackendMessage> => [
  ...PgProtocol.makeParser().push(bytes)
]

/** The text values of every DataRow. */
export const rows = (messages: ReadonlyArray<PgProtocol.BackendMessage>): Array<Array<string | null>> =>
  messages.flatMap((message) =>
    message._tag === "DataRow"
      ? [message.values.map((value) => (value === null ? null : Buffer.from(value).toString("utf8")))]
      : []
  )

/** Runs one simple query on a fresh bridge socket and returns the text rows. */
export const queryOnce = async (connect: () => Duplex, sql: string): Promise<Array<Array<string | null>>> => {
  const socket = connect()
  const done = readAll(socket)
  socket.write(msg.startup())
  socket.write(msg.query(sql))
  socket.end(msg.terminate())
  const messages = parseAll(await done)
  const error = messages.find((message) => message._tag === "ErrorResponse")
  if (error !== undefined) throw new Error(JSON.stringify(error))
  return rows(messages)
}
