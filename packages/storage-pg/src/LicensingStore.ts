/**
 * The whole PostgreSQL store as one layer: the connection (a server or embedded PGlite), the migrations run
 * before anything else, and every port of the domain on top.
 */
import { Duration, Effect, Layer } from "effect"
import type { PgClient } from "@effect/sql-pg/PgClient"
import type { Migrator } from "effect/sql"
import { SqlClient } from "effect/sql/SqlClient"
import { Engine, Errors } from "@lm/domain"
import * as Migrations from "./Migrations.js"
import { layerPglite, layerPostgres, type PgliteOptions, type PostgresOptions } from "./PgStore.js"
import { layerOutageLog, STORE_CALL_TIMEOUT, StoreCallTimeout } from "./repositories/failures.js"
import { EventLogRowsPerInsert, layerChangeFeed, layerSharedRateLimits, portsLayer } from "./repositories/index.js"

/** The ports on a migrated database, given a `PgClient`. */
export const layerOnClient: Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable, PgClient | SqlClient> = portsLayer.pipe(Layer.provideMerge(Migrations.layer))

/**
 * Every port on a PostgreSQL server (`DATABASE_URL`), migrated at start, with the change feed through which
 * several server processes sharing the database keep their caches coherent, and the rate-limit buckets they share.
 * Each store call is bounded by `options.storeCallTimeout` (default 15 seconds); the store logs its outages on its
 * own (`layerOutageLog`).
 */
export const layerPostgresStore = (
  options: PostgresOptions
): Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable> =>
  Layer.mergeAll(layerOnClient, layerChangeFeed, layerSharedRateLimits).pipe(
    Layer.provide(layerPostgres(options)),
    Layer.provide(Layer.succeed(StoreCallTimeout, options.storeCallTimeout ?? STORE_CALL_TIMEOUT)),
    Layer.provide(layerOutageLog)
  )

/** How often embedded PGlite is vacuumed and checkpointed by default (autovacuum's default pause between runs). */
export const defaultPgliteMaintenanceEvery: Duration.Input = "1 minute"

/**
 * The upkeep PostgreSQL's background workers do, which embedded PGlite (PostgreSQL in single-user mode) has no
 * process for: a plain `VACUUM` (space of deleted and updated rows becomes reusable: the event log's retention
 * deletes, heartbeats update) and a `CHECKPOINT` (finished WAL segments are recycled). Without it a PGlite data
 * folder only grows, retention or not (bench/README.md, "Growth").
 */
export const maintainPglite: Effect.Effect<void, unknown, SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`VACUUM`
  yield* sql`CHECKPOINT`
})

/** {@link maintainPglite} every `every` while the layer lives (first after `every`); failures are logged, retried next time. */
export const layerPgliteMaintenance = (every: Duration.Input): Layer.Layer<never, never, SqlClient> =>
  Duration.toMillis(Duration.fromInputUnsafe(every)) <= 0
    ? Layer.empty
    : Layer.effectDiscard(
      Effect.sleep(every).pipe(
        Effect.andThen(maintainPglite),
        Effect.catchCause((cause) => Effect.logWarning("PGlite maintenance (VACUUM, CHECKPOINT) failed", cause)),
        Effect.forever,
        Effect.forkScoped
      )
    )

/**
 * Every port on embedded PGlite in a data folder (or in memory), migrated at start, kept by
 * {@link maintainPglite} every `maintenanceEvery` (default 1 minute). PGlite runs on a worker
 * thread by default (`thread`); the event log is written in inserts of at most 500 rows, so that with
 * `thread: "main"` its writes stall requests for a few milliseconds at a time, between which they are answered
 * (smaller inserts cost more per row: 100 rows per insert wrote ~40k rows/s here, 500 rows ~50-75k rows/s).
 */
export const layerPgliteStore = (
  options: PgliteOptions = {}
): Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable> =>
  Layer.merge(layerOnClient, layerPgliteMaintenance(options.maintenanceEvery ?? defaultPgliteMaintenanceEvery)).pipe(
    Layer.provide(layerPglite(options)),
    Layer.provide(Layer.succeed(EventLogRowsPerInsert, 500)),
    Layer.provide(layerOutageLog)
  )
