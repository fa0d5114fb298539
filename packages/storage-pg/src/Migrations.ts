/**
 * The store's schema, as migrations run by effect's SQL `Migrator`, one frozen file each in `migrations/`. They
 * run the same way on a PostgreSQL server and on PGlite; applied ids and names are recorded in `lm_migrations`.
 */
import { Effect, Layer } from "effect"
import * as Migrator from "effect/sql/Migrator"
import type { SqlClient } from "effect/sql/SqlClient"
import lmMeta from "./migrations/0001_lm_meta.js"
import licensingSchema from "./migrations/0002_licensing_schema.js"
import changeNotifications from "./migrations/0003_change_notifications.js"
import activityTimeBrin from "./migrations/0004_activity_time_brin.js"
import webhooks from "./migrations/0005_webhooks.js"
import subscriptions from "./migrations/0006_subscriptions.js"
import rateLimits from "./migrations/0007_rate_limits.js"
import analytics from "./migrations/0008_analytics.js"
import releases from "./migrations/0009_releases.js"
import licenseSuspendedBy from "./migrations/0010_license_suspended_by.js"
import analyticsCovering from "./migrations/0011_analytics_covering.js"
import topLicenseTotals from "./migrations/0012_top_license_totals.js"
import deletedApiKeys from "./migrations/0013_deleted_api_keys.js"
import policies from "./migrations/0014_policies.js"
import auditLog from "./migrations/0015_audit_log.js"
import billing from "./migrations/0016_billing.js"
import idempotency from "./migrations/0017_idempotency.js"
import { type StoreUnavailable, storeUnavailable } from "./PgStore.js"

/**
 * The migrations, keyed by their file name `<id>_<name>` and applied in id order. The Migrator records the id
 * as a number and the name (`1`, `lm_meta`): the same as when they were defined in code, so databases migrated
 * then carry on. Never edit one that has shipped: add a new file.
 */
export const migrations = {
  "0001_lm_meta": lmMeta,
  "0002_licensing_schema": licensingSchema,
  "0003_change_notifications": changeNotifications,
  "0004_activity_time_brin": activityTimeBrin,
  "0005_webhooks": webhooks,
  "0006_subscriptions": subscriptions,
  "0007_rate_limits": rateLimits,
  "0008_analytics": analytics,
  "0009_releases": releases,
  "0010_license_suspended_by": licenseSuspendedBy,
  "0011_analytics_covering": analyticsCovering,
  "0012_top_license_totals": topLicenseTotals,
  "0013_deleted_api_keys": deletedApiKeys,
  "0014_policies": policies,
  "0015_audit_log": auditLog,
  "0016_billing": billing,
  "0017_idempotency": idempotency
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
