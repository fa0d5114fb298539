/**
 * A PostgreSQL wire-protocol socket backed by an embedded PGlite database, so that @effect/sql-pg's own
 * client (`PgClient`'s `stream` option) can talk to PGlite as if it were a server.
 *
 * PGlite is one backend session in this process. The bridge frames the bytes the client writes into
 * protocol messages and hands each complete message, in order, to `execProtocolRawStream` under PGlite's
 * exclusive lock; PGlite's replies are pushed back as they are produced. Use it with a pool of exactly one
 * connection: two sockets open at once would share the one session (and its transaction).
 */
import type { PGlite } from "@electric-sql/pglite"
import { Duplex } from "node:stream"

/** Startup packet codes (int32 after the length) that PGlite cannot answer itself. */
const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102

/** Frontend message types that belong to an extended-query cycle ended by a Sync (`S`). */
const EXTENDED = new Set([0x50 /* P */, 0x42 /* B */, 0x44 /* D */, 0x45 /* E */, 0x43 /* C */, 0x48 /* H */])
const SYNC = 0x53
const QUERY = 0x51
const TERMINATE = 0x58

/** Largest frontend message accepted (PostgreSQL's own limit for most messages is 1 GiB). */
const MAX_MESSAGE = 1 << 30

const encoder = new TextEncoder()

/** Encodes a simple-query (`Q`) message. */
const simpleQuery = (sql: string): Uint8Array => {
  const text = encoder.encode(sql)
  const message = Buffer.alloc(1 + 4 + text.length + 1)
  message[0] = QUERY
  message.writeInt32BE(4 + text.length + 1, 1)
  message.set(text, 5)
  return message
}
const SYNC_MESSAGE = Uint8Array.of(SYNC, 0, 0, 0, 4)
const ROLLBACK = simpleQuery("ROLLBACK")
/** Session reset between connections: prepared statements, cursors, settings, LISTENs, temp tables. */
const DISCARD_ALL = simpleQuery("DISCARD ALL")

/** Opens sockets onto one PGlite database. */
export interface PgliteBridge {
  /** A new socket: pass it as `PgClient`'s `stream` option. */
  readonly connect: () => Duplex
  /**
   * Stops every open socket and waits for their clean-up (see `connect`). Call it before `db.close()`, so
   * that no message or clean-up reaches a closed database.
   */
  readonly close: () => Promise<void>
}

/** Makes a bridge onto `db`. */
export const make = (db: PGlite): PgliteBridge => {
  const sockets = new Set<PgliteSocket>()
  return {
    connect: () => {
      const socket = new PgliteSocket(db)
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
      return socket
    },
    close: () => Promise.all(Array.from(sockets, (socket) => socket.finish())).then(() => undefined)
  }
}

/**
 * One client connection. Writes are framed into messages; `_write` completes only when PGlite has
 * answered every complete message in the chunk, so the writable side itself keeps messages in order.
 */
class PgliteSocket extends Duplex {
  private readonly db: PGlite
  /** Bytes of an incomplete message carried over from earlier chunks. */
  private pending: Buffer = Buffer.alloc(0)
  /** Before the startup packet is accepted, messages carry no type byte. */
  private startup = true
  /** An extended-query cycle is open (Parse/Bind/Execute... seen, Sync not yet). */
  private extendedOpen = false
  /** Once set, no further message reaches PGlite. */
  private finished = false
  private cleanup: Promise<void> | undefined

  constructor(db: PGlite) {
    super({ allowHalfOpen: false })
    this.db = db
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    this.drain().then(() => callback(), callback)
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.finish().then(() => {
      this.push(null)
      callback()
    }, callback)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.finish().then(() => callback(error), () => callback(error))
  }

  /** Feeds every complete message in `pending` to PGlite, one at a time. */
  private async drain(): Promise<void> {
    let offset = 0
    try {
      while (!this.finished) {
        const available = this.pending.length - offset
        const header = this.startup ? 4 : 5
        if (available < header) break
        const length = this.startup
          ? this.pending.readInt32BE(offset)
          : this.pending.readInt32BE(offset + 1) + 1
        if (length < header || length > MAX_MESSAGE) {
          throw new Error(`PgliteBridge: invalid message length ${length}`)
        }
        if (available < length) break
        const message = this.pending.subarray(offset, offset + length)
        offset += length
        await (this.startup ? this.onStartup(message) : this.onMessage(message))
      }
    } finally {
      // Keep a copy of the unread tail: the caller may reuse its chunk once the write completes.
      this.pending = offset === this.pending.length ? Buffer.alloc(0) : Buffer.from(this.pending.subarray(offset))
    }
  }

  private async onStartup(message: Buffer): Promise<void> {
    const code = message.length >= 8 ? message.readInt32BE(4) : 0
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      this.push(Buffer.from("N"))
      return
    }
    if (code === CANCEL_REQUEST) {
      // PGlite runs one statement at a time to completion; there is nothing to cancel.
      await this.finish()
      this.push(null)
      return
    }
    this.startup = false
    await this.exec(message)
  }

  private async onMessage(message: Buffer): Promise<void> {
    const type = message[0]!
    if (type === TERMINATE) {
      await this.finish()
      this.push(null)
      return
    }
    if (EXTENDED.has(type)) this.extendedOpen = true
    else if (type === SYNC || type === QUERY) this.extendedOpen = false
    await this.exec(message)
  }

  private exec(message: Uint8Array): Promise<void> {
    return this.db.runExclusive(() =>
      this.db.execProtocolRawStream(message, {
        // PGlite reuses its output buffer: copy before handing the bytes to the reader.
        onRawData: (data) => {
          if (!this.destroyed) this.push(Buffer.from(data))
        }
      })
    )
  }

  /**
   * Stops forwarding and resets the session for the next connection: a transaction (or an extended-query
   * cycle) left open by this connection is rolled back, then `DISCARD ALL`. Runs once, after the message
   * PGlite is busy with.
   */
  finish(): Promise<void> {
    if (this.cleanup !== undefined) return this.cleanup
    this.finished = true
    const opened = !this.startup
    const extendedOpen = this.extendedOpen
    const ignore = { onRawData: () => {} }
    this.cleanup = opened
      ? this.db.runExclusive(async () => {
        if (this.db.closed) return
        if (extendedOpen || this.db.isInTransaction()) {
          // ROLLBACK aborts an open explicit or implicit transaction; if an error left the session skipping
          // until Sync, it is ignored, so Sync and roll back once more.
          await this.db.execProtocolRawStream(ROLLBACK, ignore)
          await this.db.execProtocolRawStream(SYNC_MESSAGE, ignore)
          if (this.db.isInTransaction()) await this.db.execProtocolRawStream(ROLLBACK, ignore)
        }
        await this.db.execProtocolRawStream(DISCARD_ALL, ignore)
      }).catch(() => {})
      : Promise.resolve()
    return this.cleanup
  }
}
