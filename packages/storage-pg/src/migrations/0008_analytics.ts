/**
 * Migration 8: analytics (CONTRACT §11). The event log gets the product of the license a call found (the
 * series filter on it); `lm_activity_hourly` holds the hourly counters each batch of the log adds (per license
 * and per product, see `Analytics.hourlyCountsOf` in the domain), so overviews and series read a few rows per
 * hour instead of the raw log, and retention (which prunes `lm_activity`) leaves them; `lm_anomalies` remembers
 * the anomalies already announced with `anomaly.detected`.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE lm_activity ADD COLUMN product_id bigint`
  yield* sql`
    CREATE TABLE lm_activity_hourly (
      scope text NOT NULL,
      scope_id bigint NOT NULL,
      hour timestamptz NOT NULL,
      valid bigint NOT NULL,
      invalid bigint NOT NULL,
      refused bigint NOT NULL,
      activations bigint NOT NULL,
      PRIMARY KEY (scope, scope_id, hour)
    )`
  yield* sql`CREATE INDEX lm_activity_hourly_time ON lm_activity_hourly (scope, hour)`
  yield* sql`
    CREATE TABLE lm_anomalies (
      license_id bigint NOT NULL,
      type text NOT NULL,
      detected_at timestamptz NOT NULL,
      PRIMARY KEY (license_id, type)
    )`
})
