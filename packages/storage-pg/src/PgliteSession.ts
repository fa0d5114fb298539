/**
 * The one backend session of an embedded PGlite database, as the wire-protocol bridge uses it: run frontend
 * messages in order, and reset what a connection left behind. Two ways to hold it:
 * - {@link inThread}: PGlite on the caller's thread (tests, tools);
 * - {@link inWorker}: PGlite on a worker thread of this process, so that its statements (the event log's
 *   inserts, seat transactions) never stall the thread that answers requests. This same file is the worker's
 *   code, and it imports nothing but Node and PGlite, so it also runs as TypeScript source (Node strips types).
 */
import type { PGlite as PGliteDb, PGliteOptions } from "@electric-sql/pglite"
import { isMainThread, MessageChannel, MessagePort, parentPort, receiveMessageOnPort, Worker, workerData } from "node:worker_threads"

/** What the bridge needs of the database. */
export interface PgliteSession {
  /**
   * Runs `messages` in order, as one uninterrupted sequence, handing every reply chunk to `onData` (the
   * receiver's to keep).
   */
  readonly exec: (messages: ReadonlyArray<Uint8Array>, onData: (data: Uint8Array) => void) => Promise<void>
  /**
   * Ends what a connection left open — its transaction, or an extended-query cycle cut before Sync — and
   * discards its session state (prepared statements, settings, LISTENs). Never fails; does nothing once the
   * database is closed.
   */
  readonly reset: (extendedOpen: boolean) => Promise<void>
}

const encoder = new TextEncoder()

/** Encodes a simple-query (`Q`) message. */
const simpleQuery = (sql: string): Uint8Array => {
  const text = encoder.encode(sql)
  const message = new Uint8Array(1 + 4 + text.length + 1)
  message[0] = 0x51
  new DataView(message.buffer).setInt32(1, 4 + text.length + 1)
  message.set(text, 5)
  return message
}
const SYNC_MESSAGE = Uint8Array.of(0x53, 0, 0, 0, 4)
const ROLLBACK = simpleQuery("ROLLBACK")
const DISCARD_ALL = simpleQuery("DISCARD ALL")
const ignore = { onRawData: () => {} }

/** The session of a PGlite database open on this thread. */
export const inThread = (db: PGliteDb): PgliteSession => ({
  exec: (messages, onData) =>
    db.runExclusive(async () => {
      // PGlite reuses its output buffer: each chunk is copied before it is handed on.
      const onRawData = (data: Uint8Array) => onData(data.slice())
      for (const message of messages) await db.execProtocolRawStream(message, { onRawData })
    }),
  reset: (extendedOpen) =>
    db.runExclusive(async () => {
      if (db.closed) return
      if (extendedOpen || db.isInTransaction()) {
        // ROLLBACK aborts an open explicit or implicit transaction; if an error left the session skipping until
        // Sync, it is ignored, so Sync and roll back once more.
        await db.execProtocolRawStream(ROLLBACK, ignore)
        await db.execProtocolRawStream(SYNC_MESSAGE, ignore)
        if (db.isInTransaction()) await db.execProtocolRawStream(ROLLBACK, ignore)
      }
      await db.execProtocolRawStream(DISCARD_ALL, ignore)
    }).catch(() => {})
})

/** Where PGlite opens its database (as `PGlite.create` takes them). */
export interface PgliteOpenOptions {
  readonly dataDir?: string | undefined
  readonly loadDataDir?: Blob | undefined
}

/** A PGlite database on a worker thread. */
export interface PgliteWorker {
  readonly session: PgliteSession
  /** Closes the database (its last writes reach the data folder) and ends the thread. */
  readonly close: () => Promise<void>
}

type Call =
  | { readonly op: "exec"; readonly messages: ReadonlyArray<Uint8Array> }
  | { readonly op: "reset"; readonly extendedOpen: boolean }
  | { readonly op: "close" }

type Request =
  | { readonly id: number; readonly op: "exec"; readonly packed: Uint8Array; readonly lengths: ReadonlyArray<number> }
  | { readonly id: number; readonly op: "reset"; readonly extendedOpen: boolean }
  | { readonly id: number; readonly op: "close" }

type Reply =
  | {
    readonly id: number
    readonly data?: Uint8Array | undefined
    readonly error?: string | undefined
    /** The session is inside a transaction after this request. */
    readonly inTransaction: boolean
  }
  | { readonly id: 0; readonly opened: true }
  | { readonly id: 0; readonly failed: string }

const WORKER_MARK = "@lm/storage-pg/PgliteSession"

/**
 * Longest a statement inside a transaction may keep the calling thread waiting (see {@link inWorker}); past it
 * the database is given up (every call fails) rather than the process hanging.
 */
const SYNC_WAIT_LIMIT_MILLIS = 10 * 60_000

/**
 * Starts a worker thread, opens PGlite in it, and resolves once the database is open (rejects with PGlite's
 * error if it cannot be opened). Requests are answered in the order they were made. If the thread dies, every
 * pending and later call fails with that reason.
 *
 * Outside a transaction a call is answered asynchronously: the caller's thread goes on answering requests while
 * the statement runs (the event log's inserts, reads the cache missed). Inside a transaction the caller's
 * thread waits for the answer (`Atomics.wait`), as it would with PGlite on its own thread: the transaction
 * holds the one session, and waiting instead for the caller's event loop to come round between its statements
 * would keep every other transaction queued behind it for that much longer.
 */
export const inWorker = (options: PgliteOpenOptions): Promise<PgliteWorker> =>
  new Promise((resolveOpen, rejectOpen) => {
    /** [0] counts the worker's replies (a waiting caller sleeps until it moves); [1] is 1 once the thread ends. */
    const replies = new Int32Array(new SharedArrayBuffer(8))
    const channel = new MessageChannel()
    const worker = new Worker(new URL(import.meta.url), {
      workerData: {
        [WORKER_MARK]: true,
        dataDir: options.dataDir,
        loadDataDir: options.loadDataDir,
        replies,
        port: channel.port2
      } satisfies WorkerData,
      transferList: [channel.port2]
    })
    const port = channel.port1
    const pending = new Map<number, { resolve: (data: Uint8Array | undefined) => void; reject: (e: Error) => void }>()
    let nextId = 1
    let opened = false
    let inTransaction = false
    let stopped: Error | undefined

    const stop = (reason: Error) => {
      if (stopped !== undefined) return
      stopped = reason
      for (const call of pending.values()) call.reject(reason)
      pending.clear()
      port.close()
      if (!opened) rejectOpen(reason)
    }
    const settled = () => {
      if (pending.size === 0) port.unref()
    }
    const onReply = (reply: Reply) => {
      if ("opened" in reply) {
        opened = true
        settled()
        resolveOpen({ session, close })
        return
      }
      if ("failed" in reply) {
        stop(new Error(reply.failed))
        void worker.terminate()
        return
      }
      inTransaction = reply.inTransaction
      const call = pending.get(reply.id)
      if (call === undefined) return
      pending.delete(reply.id)
      settled()
      if (reply.error !== undefined) call.reject(new Error(reply.error))
      else call.resolve(reply.data)
    }
    worker.on("error", (error) => stop(error instanceof Error ? error : new Error(String(error))))
    worker.on("exit", (code) => stop(new Error(`the PGlite worker thread stopped (exit code ${code})`)))
    port.on("message", onReply)
    // Like PGlite on the caller's thread, an open database does not keep the process alive by itself: the
    // port is referenced only while it is opening or a call waits for its answer.
    worker.unref()

    const statements = new StatementTexts()
    const call = (request: Call): Promise<Uint8Array | undefined> => {
      if (stopped !== undefined) return Promise.reject(stopped)
      const id = nextId++
      const answer = new Promise<Uint8Array | undefined>((resolve, reject) => pending.set(id, { resolve, reject }))
      port.ref()
      if (request.op === "reset") statements.clear()
      const wait = request.op === "exec" && (statements.opensTransaction(request.messages) || inTransaction)
      const seen = Atomics.load(replies, 0)
      if (request.op === "exec") {
        // One compact copy, handed over: posting the messages themselves would copy the whole buffers they
        // are views of (the client's write buffers).
        const packed = concat(request.messages, true)
        worker.postMessage({ id, op: "exec", packed, lengths: request.messages.map((m) => m.length) }, transferable(packed))
      } else {
        worker.postMessage({ ...request, id })
      }
      if (wait) waitFor(id, seen)
      return answer
    }

    /** Blocks this thread until the reply to `id` has been handled (or the wait limit has passed). */
    const waitFor = (id: number, seen: number) => {
      const deadline = Date.now() + SYNC_WAIT_LIMIT_MILLIS
      while (pending.has(id)) {
        const received = receiveMessageOnPort(port)
        if (received !== undefined) {
          onReply(received.message)
          continue
        }
        if (Atomics.load(replies, 1) === 1) {
          stop(new Error("the PGlite worker thread stopped"))
          return
        }
        const remaining = deadline - Date.now()
        if (remaining <= 0) {
          stop(new Error(`PGlite did not answer within ${SYNC_WAIT_LIMIT_MILLIS} ms`))
          void worker.terminate()
          return
        }
        Atomics.wait(replies, 0, seen, Math.min(remaining, 1_000))
        seen = Atomics.load(replies, 0)
      }
    }

    const session: PgliteSession = {
      exec: async (messages, onData) => {
        const data = await call({ op: "exec", messages })
        if (data !== undefined && data.length > 0) onData(data)
      },
      reset: (extendedOpen) => call({ op: "reset", extendedOpen }).then(() => undefined, () => undefined)
    }
    let closing: Promise<void> | undefined
    const close = () =>
      (closing ??= call({ op: "close" }).then(
        () => worker.terminate().then(() => undefined),
        () => worker.terminate().then(() => undefined)
      ))
  })

const decoder = new TextDecoder()

/** Reads the NUL-terminated string at `offset`; returns it and the offset after its NUL. */
const cString = (message: Uint8Array, offset: number): [string, number] => {
  const end = message.indexOf(0, offset)
  const stop = end === -1 ? message.length : end
  return [decoder.decode(message.subarray(offset, stop)), stop + 1]
}

const BEGINS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i

/**
 * The text of the client's prepared statements (from its Parse messages), to tell which messages start a
 * transaction: `BEGIN` may be sent as a simple query or as a Bind of a statement prepared earlier.
 */
class StatementTexts {
  private readonly byName = new Map<string, string>()

  clear(): void {
    this.byName.clear()
  }

  opensTransaction(messages: ReadonlyArray<Uint8Array>): boolean {
    let opens = false
    for (const message of messages) {
      const type = message[0]
      if (type === 0x50 /* Parse */) {
        const [name, next] = cString(message, 5)
        const [text] = cString(message, next)
        if (this.byName.size >= 10_000) this.byName.clear()
        this.byName.set(name, text)
        opens ||= BEGINS.test(text)
      } else if (type === 0x42 /* Bind */) {
        const [, next] = cString(message, 5)
        const [statement] = cString(message, next)
        opens ||= BEGINS.test(this.byName.get(statement) ?? "")
      } else if (type === 0x51 /* Query */) {
        opens ||= BEGINS.test(cString(message, 5)[0])
      }
    }
    return opens
  }
}

/** The worker's side: opens the database, then answers requests one at a time, in order. */
const serve = async ({ dataDir, loadDataDir, port, replies }: WorkerData) => {
  // A caller waiting in `Atomics.wait` cannot see the thread's exit event: it is told here.
  process.on("exit", () => {
    Atomics.store(replies, 1, 1)
    Atomics.add(replies, 0, 1)
    Atomics.notify(replies, 0)
  })
  const reply = (message: Reply, transfer: Array<ArrayBuffer> = []) => {
    port.postMessage(message, transfer)
    Atomics.add(replies, 0, 1)
    Atomics.notify(replies, 0)
  }
  let db: PGliteDb
  try {
    const { PGlite } = await import("@electric-sql/pglite")
    const options: PGliteOptions = {}
    if (dataDir !== undefined) options.dataDir = dataDir
    if (loadDataDir !== undefined) options.loadDataDir = loadDataDir
    db = await PGlite.create(options)
  } catch (error) {
    reply({ id: 0, failed: error instanceof Error ? error.message : String(error) })
    return
  }
  const session = inThread(db)
  let queue = Promise.resolve()
  parentPort!.on("message", (request: Request) => {
    queue = queue.then(async () => {
      try {
        if (request.op === "exec") {
          const chunks: Array<Uint8Array> = []
          const messages: Array<Uint8Array> = []
          let offset = 0
          for (const length of request.lengths) {
            messages.push(request.packed.subarray(offset, offset + length))
            offset += length
          }
          await session.exec(messages, (chunk) => chunks.push(chunk))
          const data = concat(chunks)
          reply({ id: request.id, data, inTransaction: db.isInTransaction() }, transferable(data))
        } else if (request.op === "reset") {
          await session.reset(request.extendedOpen)
          reply({ id: request.id, inTransaction: !db.closed && db.isInTransaction() })
        } else {
          if (!db.closed) await db.close()
          reply({ id: request.id, inTransaction: false })
        }
      } catch (error) {
        reply({
          id: request.id,
          error: error instanceof Error ? error.message : String(error),
          inTransaction: !db.closed && db.isInTransaction()
        })
      }
    })
  })
  reply({ id: 0, opened: true })
}

/** The chunks end to end; the chunk itself when there is one, unless `copy`. */
const concat = (chunks: ReadonlyArray<Uint8Array>, copy = false): Uint8Array => {
  if (chunks.length === 1 && !copy) return chunks[0]!
  let length = 0
  for (const chunk of chunks) length += chunk.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/** The buffer of `view` to hand over with a message (none when it is shared memory, which is not handed over). */
const transferable = (view: Uint8Array): Array<ArrayBuffer> => (view.buffer instanceof ArrayBuffer ? [view.buffer] : [])

/** What {@link inWorker} passes the thread. */
interface WorkerData {
  readonly [WORKER_MARK]: true
  readonly dataDir?: string | undefined
  readonly loadDataDir?: Blob | undefined
  /** See {@link inWorker}: [0] counts replies, [1] is 1 once the thread ends. */
  readonly replies: Int32Array
  readonly port: MessagePort
}

/** Whether this thread's `workerData` is that of a PGlite worker started by {@link inWorker}. */
const isWorkerData = (data: unknown): data is WorkerData =>
  typeof data === "object" && data !== null && WORKER_MARK in data && data[WORKER_MARK] === true &&
  "port" in data && data.port instanceof MessagePort && "replies" in data && data.replies instanceof Int32Array &&
  (!("dataDir" in data) || data.dataDir === undefined || typeof data.dataDir === "string") &&
  (!("loadDataDir" in data) || data.loadDataDir === undefined || data.loadDataDir instanceof Blob)

if (!isMainThread && parentPort !== null && isWorkerData(workerData)) {
  void serve(workerData)
}
