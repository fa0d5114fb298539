/**
 * Migration 15: the audit log (CONTRACT §18, issue 30): one row per management write, refused ones included, with
 * its actor (`api_key` with the key's id and truncated key, `cli`, `system`), client IP, action, target, request
 * id and HTTP status. Listed newest first by id, filtered by actor, action, target and time; pruned by time like
 * the event log. No foreign key to `lm_api_keys`: an entry outlives the key it names.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE lm_audit_log (
      id bigserial PRIMARY KEY,
      at timestamptz NOT NULL,
      actor_type text NOT NULL,
      api_key_id bigint,
      truncated_key text,
      ip text,
      action text NOT NULL,
      target_type text NOT NULL,
      target_id text,
      request_id text,
      status integer NOT NULL
    )`
  yield* sql`CREATE INDEX lm_audit_log_at ON lm_audit_log (at)`
  yield* sql`CREATE INDEX lm_audit_log_target ON lm_audit_log (target_type, target_id, id)`
  yield* sql`CREATE INDEX lm_audit_log_action ON lm_audit_log (action, id)`
})
