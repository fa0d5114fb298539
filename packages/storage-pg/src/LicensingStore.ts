/**
 * The whole PostgreSQL store as one layer: the connection (a server or embedded PGlite), the migrations run
 * before anything else, and every port of the domain on top.
 */
import { Layer } from "effect"
import type { PgClient } from "@effect/sql-pg/PgClient"
import type { Migrator } from "effect/sql"
import type { SqlClient } from "effect/sql/SqlClient"
import { Engine, Errors } from "@lm/domain"
import * as Migrations from "./Migrations.js"
import { layerPglite, layerPostgres, type PgliteOptions, type PostgresOptions } from "./PgStore.js"
import { EventLogRowsPerInsert, layerChangeFeed, portsLayer } from "./repositories/index.js"

/** The ports on a migrated database, given a `PgClient`. */
export const layerOnClient: Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable, PgClient | SqlClient> = portsLayer.pipe(Layer.provideMerge(Migrations.layer))

/**
 * Every port on a PostgreSQL server (`DATABASE_URL`), migrated at start, with the change feed through which
 * several server processes sharing the database keep their caches coherent.
 */
export const layerPostgresStore = (
  options: PostgresOptions
): Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable> =>
  Layer.merge(layerOnClient, layerChangeFeed).pipe(Layer.provide(layerPostgres(options)))

/**
 * Every port on embedded PGlite in a data folder (or in memory), migrated at start. PGlite runs on a worker
 * thread by default (`thread`); the event log is written in inserts of at most 500 rows, so that with
 * `thread: "main"` its writes stall requests for a few milliseconds at a time, between which they are answered
 * (smaller inserts cost more per row: 100 rows per insert wrote ~40k rows/s here, 500 rows ~50-75k rows/s).
 */
export const layerPgliteStore = (
  options: PgliteOptions = {}
): Layer.Layer<Engine.StorePorts, Migrator.MigrationError | Errors.StorageUnavailable> =>
  layerOnClient.pipe(
    Layer.provide(layerPglite(options)),
    Layer.provide(Layer.succeed(EventLogRowsPerInsert, 500))
  )
