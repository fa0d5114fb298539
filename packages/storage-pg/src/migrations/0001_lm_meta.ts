/**
 * Migration 1: `lm_meta`, a key/value table for facts about the store itself.
 * Frozen: this migration has shipped. Never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE lm_meta (key text PRIMARY KEY, value text NOT NULL)`
})
