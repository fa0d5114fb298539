/**
 * The store's schema, as migrations defined in code and run by effect's SQL `Migrator`. They run the same
 * way on a PostgreSQL server and on PGlite; applied ids are recorded in `lm_migrations`.
 */
import { Effect, Layer } from "effect"
import * as Migrator from "effect/sql/Migrator"
import { SqlClient } from "effect/sql/SqlClient"
import { type StoreUnavailable, storeUnavailable } from "./PgStore.js"
import { createChangeNotifications, createLicensingSchema } from "./repositories/schema.js"

/** The migrations, keyed `<id>_<name>`, applied in id order. Never edit one that has shipped: add a new one. */
export const migrations = {
  "1_lm_meta": Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`CREATE TABLE lm_meta (key text PRIMARY KEY, value text NOT NULL)`
  }),
  "2_licensing_schema": createLicensingSchema,
  "3_change_notifications": createChangeNotifications,
  // The event log only grows, in time order: a BRIN index serves time ranges at a fraction of a B-tree's cost
  // per inserted row (every client call inserts one).
  "4_activity_time_brin": Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`DROP INDEX IF EXISTS lm_activity_at`
    yield* sql`CREATE INDEX lm_activity_at ON lm_activity USING brin (at)`
  })
} satisfies Record<string, Effect.Effect<void, unknown, SqlClient>>

/** The table where applied migrations are recorded. */
export const migrationsTable = "lm_migrations"

const run = Migrator.make({})

/**
 * Applies the pending migrations; returns the `[id, name]` of those it applied. Concurrent runners (several
 * processes on one PostgreSQL) are serialised by a table lock, so each migration runs once.
 */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | StoreUnavailable,
  SqlClient
> = run({ loader: Migrator.fromRecord(migrations), table: migrationsTable }).pipe(
  Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error)))
)

/** Runs {@link migrate} when the layer is built. */
export const layer: Layer.Layer<never, Migrator.MigrationError | StoreUnavailable, SqlClient> = Layer.effectDiscard(
  migrate
)
