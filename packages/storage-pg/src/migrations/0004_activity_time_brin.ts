/**
 * Migration 4: the event log only grows, in time order: a BRIN index serves time ranges at a fraction of a
 * B-tree's cost per inserted row (every client call inserts one).
 * Frozen: this migration has shipped. Never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`DROP INDEX IF EXISTS lm_activity_at`
  yield* sql`CREATE INDEX lm_activity_at ON lm_activity USING brin (at)`
})
