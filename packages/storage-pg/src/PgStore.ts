/**
 * The SQL connection of the PostgreSQL store: `SqlClient` + `PgClient` (from @effect/sql-pg) on a PostgreSQL
 * server or on embedded PGlite. Both give the same client, so the same migrations and queries run on either.
 */
import { PGlite } from "@electric-sql/pglite"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Layer, Redacted, Result } from "effect"
import { Errors } from "@lm/domain"
import type { SqlClient } from "effect/sql/SqlClient"
import * as fs from "node:fs"
import * as path from "node:path"
import * as PgliteBridge from "./PgliteBridge.js"
import * as PgliteSession from "./PgliteSession.js"
import { storeUnavailableAtStart as storeUnavailable } from "./repositories/failures.js"

/** The store cannot be reached or opened: the domain's `StorageUnavailable` (503 `service_unavailable`). */
export const StoreUnavailable = Errors.StorageUnavailable
export type StoreUnavailable = Errors.StorageUnavailable

/** A `StoreUnavailable` carrying the message of a failed connection or query (and the server's SQLSTATE). */
export { storeUnavailable }

/** Options of {@link layerPostgres}. */
export interface PostgresOptions {
  /** A `postgres://` URL, e.g. `DATABASE_URL`. */
  readonly url: string | Redacted.Redacted<string>
  /** How long connecting (TCP, startup, authentication) may take; default 5 seconds. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Pool size; default 10. */
  readonly maxConnections?: number | undefined
  /** How long one store call (or one transaction) may take before it answers unavailable; default 15 seconds. */
  readonly storeCallTimeout?: Duration.Input | undefined
}

/**
 * `SqlClient` + `PgClient` on a PostgreSQL server. Building the layer opens one connection and runs
 * `SELECT 1`, so an unreachable server fails here, within `connectTimeout`, with `StoreUnavailable`.
 * A connection lost later fails the queries on it with a `SqlError` (reason `ConnectionError`); the pool
 * opens a new one for the next query.
 */
export const layerPostgres = (
  options: PostgresOptions
): Layer.Layer<PgClient.PgClient | SqlClient, StoreUnavailable> =>
  PgClient.layerFrom(
    Effect.gen(function*() {
      const client = yield* PgClient.make({
        url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
        connectTimeout: options.connectTimeout ?? Duration.seconds(5),
        maxConnections: options.maxConnections ?? 10
      })
      yield* client`SELECT 1`
      return client
    }).pipe(Effect.mapError(storeUnavailable))
  )

/** Where PGlite may run (see {@link PgliteOptions.thread}). */
export const pgliteThreads = ["worker", "main"] as const

/** Options of {@link layerPglite}. */
export interface PgliteOptions {
  /** Folder holding the database, created (initdb) on first use; in memory when absent. */
  readonly dataDir?: string | undefined
  /** A data folder tarball (`PGlite.dumpDataDir`) to start from instead of running initdb. */
  readonly loadDataDir?: Blob | undefined
  /**
   * Where PGlite runs: on a worker thread of this process (default), so that statements never stall the
   * thread that answers requests, or on the caller's own thread (`"main"`: no thread hop per statement).
   */
  readonly thread?: (typeof pgliteThreads)[number] | undefined
  /**
   * How often `layerPgliteStore` vacuums and checkpoints the database (default 1 minute; `0` never): PGlite has
   * neither autovacuum nor a checkpointer (see `LicensingStore.maintainPglite`).
   */
  readonly maintenanceEvery?: Duration.Input | undefined
}

/**
 * `SqlClient` + `PgClient` on embedded PGlite, through {@link PgliteBridge}, with a pool of one connection
 * (PGlite has one session; concurrent transactions queue for it). Releasing the layer closes PGlite.
 * A data folder is locked while open: a second opener (in any process) fails with `StoreUnavailable`.
 */
export const layerPglite = (
  options: PgliteOptions = {}
): Layer.Layer<PgClient.PgClient | SqlClient, StoreUnavailable> => PgClient.layerFrom(makePglite(options))

/** The client of {@link layerPglite}, for the scope. */
export const makePglite = Effect.fnUntraced(function*(options: PgliteOptions) {
  const bridge = yield* openPglite(options)
  return yield* PgClient.make({
    stream: bridge.connect,
    username: "postgres",
    database: "postgres",
    minConnections: 1,
    maxConnections: 1
  }).pipe(Effect.mapError(storeUnavailable))
})

/**
 * Opens PGlite for the scope (locking its data folder first): on release, the bridge's sockets are cleaned
 * up, then PGlite is closed (and its thread ended), then the lock is released.
 */
const openPglite = Effect.fnUntraced(function*(options: PgliteOptions) {
  if (options.dataDir !== undefined) yield* lockDataDir(options.dataDir)
  const where = {
    ...(options.dataDir !== undefined && { dataDir: options.dataDir }),
    ...(options.loadDataDir !== undefined && { loadDataDir: options.loadDataDir })
  }
  const { bridge } = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        if (options.thread === "main") {
          const db = await PGlite.create(where)
          return { bridge: PgliteBridge.make(db), close: () => db.close() }
        }
        const worker = await PgliteSession.inWorker(where)
        return { bridge: PgliteBridge.onSession(worker.session), close: worker.close }
      },
      catch: (cause) =>
        new StoreUnavailable({
          message: `Could not open the PGlite database: ${cause instanceof Error ? cause.message : String(cause)}`
        })
    }),
    ({ bridge, close }) =>
      Effect.tryPromise(() => bridge.close().then(close)).pipe(
        Effect.tapError((error) => Effect.logWarning("PGlite did not close cleanly", error)),
        Effect.ignore
      )
  )
  // PGlite writes its files open to everyone (0666); they hold the licenses and the sealed signing seed.
  const dataDir = options.dataDir
  if (dataDir !== undefined) yield* Effect.sync(() => makePrivate(dataDir))
  return bridge
})

/** Folders 0700 and files 0600 below `dir` (PGlite's own modes ignore the process umask). */
const makePrivate = (dir: string): void => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      fs.chmodSync(file, 0o700)
      makePrivate(file)
    } else if (entry.isFile()) fs.chmodSync(file, 0o600)
  }
}

/**
 * Holds `<dataDir>/lm.lock` (the owner's pid) for the scope. PGlite does not lock its folder, and two
 * processes writing one folder would corrupt it; a lock whose process is gone (killed) is taken over.
 */
const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => takeLock(dataDir),
      catch: (cause) => new StoreUnavailable({ message: cause instanceof Error ? cause.message : String(cause) })
    }),
    (file) =>
      Effect.sync(() => {
        // Files PGlite made while open get the same modes, once it has closed.
        Result.try(() => makePrivate(dataDir))
        fs.rmSync(file, { force: true })
      })
  )

const takeLock = (dataDir: string): string => {
  const file = path.join(dataDir, "lm.lock")
  // The folder holds the licenses and the sealed signing seed: the service's user only (also one made earlier).
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  fs.chmodSync(dataDir, 0o700)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: "wx" })
      return file
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error
      const owner = Number.parseInt(fs.readFileSync(file, "utf8"), 10)
      if (isRunning(owner)) {
        throw new Error(`The data folder ${dataDir} is in use by process ${owner} (if it is not, delete ${file})`)
      }
      fs.rmSync(file, { force: true })
    }
  }
  throw new Error(`Could not lock the data folder ${dataDir}`)
}

const isRunning = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === "EPERM"
  }
}

/** The `code` of a Node system error (`EEXIST`, `EPERM`, ...). */
const errorCode = (error: unknown): unknown => (error instanceof Error && "code" in error ? error.code : undefined)
