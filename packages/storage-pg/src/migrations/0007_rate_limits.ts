/**
 * Migration 9: the rate-limit buckets several server processes share (CONTRACT §11). One row per bucket: its
 * theoretical arrival time `tat` in epoch milliseconds (fractional: a token is 60,000 / limit ms). UNLOGGED: the
 * table is written several times a second and losing it in a crash only refills the buckets, so it skips the WAL.
 * A row whose `tat` has passed is a full bucket and is deleted in the background.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE UNLOGGED TABLE lm_rate_limits (key text PRIMARY KEY, tat double precision NOT NULL)`
})
