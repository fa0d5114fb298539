/**
 * Migration 17: idempotency keys (CONTRACT §16). One row per API key and idempotency key: the digest of the request
 * that first used it, its answer (status, content type, body; null while that request runs) and when the row stops
 * counting (`expires_at`: the end of the running lease, then 24 h after the answer). Rows of a deleted API key
 * are harmless (nobody can send its requests any more) and expire like the others.
 * Expired rows are deleted in the background, by `expires_at`.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE lm_idempotency_keys (
      api_key_id bigint NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      status integer,
      content_type text,
      body text,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (api_key_id, key)
    )`
  yield* sql`CREATE INDEX lm_idempotency_keys_expiry ON lm_idempotency_keys (expires_at)`
})
