/**
 * Migration 11: the hourly counters' time index carries the counters (issue 17). `top_licenses` and the anomaly
 * rules read every per-license row of a period (one per license and hour: ~770,000 rows for 7 days at 10,000,000
 * events on 1,000,000 licenses); through `lm_activity_hourly_time` each row was a heap fetch at a random place
 * (the rows of an hour are spread over the table by updates), 4 GB read for 7 days. With the counters in the
 * index the scan is index-only. It replaces the old index (same key).
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE INDEX lm_activity_hourly_time_counters ON lm_activity_hourly (scope, hour)
    INCLUDE (scope_id, valid, invalid, refused, activations)`
  yield* sql`DROP INDEX lm_activity_hourly_time`
})
