/**
 * PgliteBridge driven directly with wire-protocol bytes: framing, session start, and clean-up when a
 * connection goes away in the middle of something.
 */
import type { PGlite } from "@electric-sql/pglite"
import type * as PgProtocol from "@effect/sql-pg/PgProtocol"
import type { Duplex } from "node:stream"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { PgliteBridge } from "@lm/storage-pg"
import { int4, msg, openDb, parseAll, queryOnce, readAll, readReady, readUntil, rows } from "./wire.js"

let db: PGlite
let close: () => Promise<void>
let bridge: PgliteBridge.PgliteBridge

beforeAll(async () => {
  ;({ db, close } = await openDb())
  bridge = PgliteBridge.make(db)
  await queryOnce(bridge.connect, "CREATE TABLE items (n int4 NOT NULL)")
})
afterAll(async () => {
  await bridge.close()
  await close()
})

/** A whole session: startup, two simple queries (one of them two statements), an extended query, Terminate. */
const conversation = Buffer.concat([
  msg.startup(),
  msg.query("SELECT 1 AS one; SELECT 'two' AS two"),
  msg.parse("SELECT $1::int4 + 1 AS next", [23]),
  msg.bind([int4(41)]),
  msg.describePortal(),
  msg.execute(),
  msg.sync(),
  msg.query("SELECT repeat('x', 3) AS xs"),
  msg.terminate()
])

/** Writes the chunks in order and returns everything the bridge answered until it ended the stream. */
const run = async (chunks: ReadonlyArray<Uint8Array>): Promise<Buffer> => {
  const socket = bridge.connect()
  const reply = readAll(socket)
  for (const chunk of chunks) socket.write(chunk)
  return reply
}

const summary = (reply: Uint8Array) =>
  parseAll(reply)
    .filter((message) => message._tag === "CommandComplete" || message._tag === "ReadyForQuery")
    .map((message) => message._tag === "CommandComplete" ? message.commandTag : `ready:${message.status}`)

describe("PgliteBridge framing", () => {
  it("answers a whole session sent as one chunk, and ends the stream on Terminate", async () => {
    const reply = await run([conversation])
    const messages = parseAll(reply)
    assert.strictEqual(messages[0]?._tag, "AuthenticationOk")
    assert.deepStrictEqual(summary(reply), ["ready:I", "SELECT 1", "SELECT 1", "ready:I", "SELECT 1", "ready:I", "SELECT 1", "ready:I"])
    const values = rows(messages)
    assert.deepStrictEqual(values[0], ["1"])
    assert.deepStrictEqual(values[1], ["two"])
    // The extended query asked for binary results: int4 42.
    assert.deepStrictEqual(values[2]?.map((value) => Buffer.from(value ?? "", "utf8").readInt32BE()), [42])
    assert.deepStrictEqual(values[3], ["xxx"])
  })

  it("gives the same answer when the session arrives one byte at a time", async () => {
    const whole = await run([conversation])
    const bytes = Array.from(conversation, (byte) => Uint8Array.of(byte))
    assert.deepStrictEqual(await run(bytes), whole)
  })

  it("gives the same answer for a split at every byte boundary", async () => {
    const whole = await run([conversation])
    for (let at = 1; at < conversation.length; at++) {
      const reply = await run([conversation.subarray(0, at), conversation.subarray(at)])
      assert.deepStrictEqual(reply, whole, `split at byte ${at}`)
    }
  })

  it("answers an SSLRequest with N and then serves the session in plain text", async () => {
    const reply = await run([msg.sslRequest(), msg.startup(), msg.query("SELECT 5"), msg.terminate()])
    assert.strictEqual(reply[0], 0x4e)
    assert.deepStrictEqual(rows(parseAll(reply.subarray(1))), [["5"]])
  })

  it("ends a CancelRequest connection without touching the session", async () => {
    const reply = await run([msg.cancelRequest()])
    assert.strictEqual(reply.length, 0)
    assert.deepStrictEqual(await queryOnce(bridge.connect, "SELECT 1"), [["1"]])
  })

  it("fails the socket on a malformed length instead of waiting forever", async () => {
    const socket = bridge.connect()
    const failed = new Promise<Error>((resolve) => socket.once("error", resolve))
    socket.write(msg.startup())
    socket.write(Uint8Array.of(0x51, 0, 0, 0, 1))
    assert.match((await failed).message, /invalid message length/)
    assert.deepStrictEqual(await queryOnce(bridge.connect, "SELECT 1"), [["1"]])
  })
})

describe("PgliteBridge clean-up", () => {
  // Counted through PGlite's own API, not a new bridge connection, so nothing but the bridge's clean-up can
  // have ended what the closed connection left open (PGlite's query() ends with a Sync, which would commit).
  const count = async () => (await db.query<{ n: number }>("SELECT count(*)::int4 AS n FROM items")).rows[0]!.n
  /** The transaction status of the last ReadyForQuery: I(dle), T(ransaction) or E(rror). */
  const status = (messages: ReadonlyArray<PgProtocol.BackendMessage>) => {
    const last = messages.at(-1)
    return last?._tag === "ReadyForQuery" ? last.status : undefined
  }
  const closed = (socket: Duplex) => new Promise((resolve) => socket.once("close", resolve))

  it("rolls back a transaction left open by a destroyed connection", async () => {
    const before = await count()
    const socket = bridge.connect()
    const answered = readReady(socket, 2)
    socket.write(msg.startup())
    socket.write(msg.query("BEGIN; INSERT INTO items VALUES (1)"))
    const messages = await answered
    assert.strictEqual(status(messages), "T")
    socket.destroy()
    await closed(socket)
    assert.isFalse(db.isInTransaction())
    assert.strictEqual(await count(), before)
  })

  it("rolls back a transaction left open by a connection that ends without Terminate", async () => {
    const before = await count()
    const socket = bridge.connect()
    const answered = readAll(socket)
    socket.write(msg.startup())
    socket.write(msg.query("BEGIN; INSERT INTO items VALUES (2)"))
    socket.end()
    await answered
    await closed(socket)
    assert.strictEqual(await count(), before)
  })

  it("rolls back a failed transaction left open", async () => {
    const before = await count()
    const socket = bridge.connect()
    const answered = readReady(socket, 3)
    socket.write(msg.startup())
    socket.write(msg.query("BEGIN; INSERT INTO items VALUES (3)"))
    socket.write(msg.query("SELECT no_such_column FROM items"))
    const messages = await answered
    assert.strictEqual(status(messages), "E")
    socket.destroy()
    await closed(socket)
    assert.strictEqual(await count(), before)
  })

  it("does not commit an extended query whose Sync never came", async () => {
    const before = await count()
    const socket = bridge.connect()
    const started = readReady(socket, 1)
    socket.write(msg.startup())
    await started
    const executed = readUntil(socket, "CommandComplete")
    socket.write(Buffer.concat([
      msg.parse("INSERT INTO items VALUES ($1)", [23]),
      msg.bind([int4(4)]),
      msg.execute(),
      // Flush makes PGlite answer without a Sync, so the insert has run when the reply arrives.
      Uint8Array.of(0x48, 0, 0, 0, 4)
    ]))
    await executed
    socket.destroy()
    await closed(socket)
    assert.strictEqual(await count(), before)
  })

  it("does not let one connection's session settings reach the next", async () => {
    const socket = bridge.connect()
    const answered = readReady(socket, 2)
    socket.write(msg.startup())
    socket.write(msg.query("SET application_name = 'leaky'; CREATE TEMP TABLE scratch (x int)"))
    await answered
    socket.end(msg.terminate())
    await closed(socket)
    assert.deepStrictEqual(
      await queryOnce(bridge.connect, "SELECT current_setting('application_name'), to_regclass('scratch')::text"),
      [["", null]]
    )
  })

  it("gives the session to a new connection only after the previous one is cut off and cleaned up", async () => {
    // A pool replaces a retired connection while the old socket may still have writes queued: its clean-up
    // (ROLLBACK, DISCARD ALL) must not land in the new connection's session.
    const before = await count()
    const old = bridge.connect()
    const oldOpen = readReady(old, 2)
    old.write(msg.startup())
    old.write(msg.query("BEGIN; INSERT INTO items VALUES (6)"))
    await oldOpen
    const oldClosed = closed(old)

    const fresh = bridge.connect()
    const started = readReady(fresh, 3)
    fresh.write(msg.startup())
    fresh.write(msg.query("PREPARE kept AS SELECT 7 AS seven"))
    fresh.write(msg.query("BEGIN; INSERT INTO items VALUES (8)"))
    await started
    // The old connection's client closes it late (it was destroyed when the new one started).
    if (!old.destroyed) old.end(msg.terminate())
    await oldClosed

    const answered = readReady(fresh, 2)
    fresh.write(msg.query("EXECUTE kept"))
    fresh.write(msg.query("COMMIT"))
    const messages = await answered
    assert.deepStrictEqual(messages.filter((m) => m._tag === "ErrorResponse"), [])
    assert.deepStrictEqual(rows(messages), [["7"]])
    assert.strictEqual(status(messages), "I")
    fresh.end(msg.terminate())
    await closed(fresh)
    // The old connection's uncommitted insert is gone; the new one's committed insert is kept.
    assert.strictEqual(await count(), before + 1)
  })

  it("keeps committed work of a connection that is closed afterwards", async () => {
    const before = await count()
    await queryOnce(bridge.connect, "BEGIN; INSERT INTO items VALUES (5); COMMIT")
    assert.strictEqual(await count(), before + 1)
  })
})
