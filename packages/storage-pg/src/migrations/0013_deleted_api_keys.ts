/**
 * Migration 13: `lm_deleted_api_keys`, the consumer keys an administrator deleted (issue 27, CONTRACT §2). The
 * bootstrap key of `LM_BOOTSTRAP_CONSUMER_*` is ensured at every start whatever other keys exist, except one
 * whose consumer key is recorded here: a deleted (perhaps leaked) bootstrap credential stays revoked. Only the
 * SHA-256 hex of the consumer key is kept, like `lm_api_keys`.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE lm_deleted_api_keys (
      consumer_key_hash text PRIMARY KEY,
      deleted_at timestamptz NOT NULL
    )`
})
