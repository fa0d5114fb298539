/**
 * A PostgreSQL wire-protocol socket backed by an embedded PGlite database, so that @effect/sql-pg's own
 * client (`PgClient`'s `stream` option) can talk to PGlite as if it were a server.
 *
 * PGlite is one backend session in this process (on this thread or on a worker thread: `PgliteSession`). The
 * bridge frames the bytes the client writes into protocol messages and hands the complete messages of each
 * write, in order, to the session; its replies are pushed back as they come. Use it with a pool of exactly one
 * connection: the session (and its transaction) is held by one socket at a time. A socket that starts a session
 * takes it over: the previous holder is cut off and destroyed, and its clean-up (`PgliteSession.reset`) runs before
 * the new socket's first message. A pool replaces a retired connection (after a cancelled statement) while the old
 * socket may still have writes queued; run later, the old socket's clean-up (DISCARD ALL, ROLLBACK) would hit the
 * new connection's prepared statements and transaction.
 */
import type { PGlite } from "@electric-sql/pglite"
import { Duplex } from "node:stream"
import { inThread, type PgliteSession } from "./PgliteSession.js"

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

/** Makes a bridge onto a PGlite database open on this thread. */
export const make = (db: PGlite): PgliteBridge => onSession(inThread(db))

/** Makes a bridge onto a PGlite session (see `PgliteSession`: on this thread or on a worker thread). */
export const onSession = (session: PgliteSession): PgliteBridge => {
  const sockets = new Set<PgliteSocket>()
  /** The socket whose session it is (the last one that started one). */
  let holder: PgliteSocket | undefined
  const claim = (socket: PgliteSocket): Promise<void> => {
    const previous = holder
    holder = socket
    if (previous === undefined || previous === socket) return Promise.resolve()
    // Nothing more of the previous socket reaches PGlite; its client sees the connection closed.
    const cleanup = previous.finish()
    previous.destroy()
    return cleanup
  }
  return {
    connect: () => {
      const socket = new PgliteSocket(session, claim)
      sockets.add(socket)
      socket.once("close", () => {
        sockets.delete(socket)
        if (holder === socket) holder = undefined
      })
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
  private readonly session: PgliteSession
  /** Takes the session for this socket; resolves once the previous holder's clean-up has run. */
  private readonly claim: (socket: PgliteSocket) => Promise<void>
  /** Bytes of an incomplete message carried over from earlier chunks. */
  private pending: Buffer = Buffer.alloc(0)
  /** Before the startup packet is accepted, messages carry no type byte. */
  private startup = true
  /** An extended-query cycle is open (Parse/Bind/Execute... seen, Sync not yet). */
  private extendedOpen = false
  /** Once set, no further message reaches PGlite. */
  private finished = false
  private cleanup: Promise<void> | undefined

  constructor(session: PgliteSession, claim: (socket: PgliteSocket) => Promise<void>) {
    super({ allowHalfOpen: false })
    this.session = session
    this.claim = claim
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

  /**
   * Feeds the complete messages in `pending` to PGlite, in order: the messages of one write go together (one
   * hop to a worker thread for a whole Parse/Bind/Execute/Sync cycle), up to a Terminate.
   */
  private async drain(): Promise<void> {
    let offset = 0
    let batch: Array<Uint8Array> = []
    const send = async () => {
      if (batch.length === 0 || this.finished) return
      const messages = batch
      batch = []
      await this.exec(messages)
    }
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
        if (this.startup) {
          await this.onStartup(message)
          continue
        }
        const type = message[0]!
        if (type === TERMINATE) {
          await send()
          await this.finish()
          this.push(null)
          break
        }
        if (EXTENDED.has(type)) this.extendedOpen = true
        else if (type === SYNC || type === QUERY) this.extendedOpen = false
        batch.push(message)
      }
      await send()
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
    await this.claim(this)
    if (!this.finished) await this.exec([message])
  }

  private exec(messages: ReadonlyArray<Uint8Array>): Promise<void> {
    return this.session.exec(messages, (data) => {
      if (!this.destroyed) this.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
    })
  }

  /**
   * Stops forwarding and resets the session for the next connection (see `PgliteSession.reset`). Runs once,
   * after the messages PGlite is busy with.
   */
  finish(): Promise<void> {
    if (this.cleanup !== undefined) return this.cleanup
    this.finished = true
    this.cleanup = this.startup ? Promise.resolve() : this.session.reset(this.extendedOpen)
    return this.cleanup
  }
}
