/**
 * Migration 10: who holds a suspended license's suspension (`suspended_by`: `administrator` or `subscription`)
 * moves from the subscription (`suspended_license`) to the license, so that an administrator's suspend of a
 * license its subscription had suspended takes the suspension over (a later resume must not lift it). Existing
 * suspended licenses keep their holder: the subscription's when its flag was set, else the administrator's.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    ALTER TABLE lm_licenses ADD COLUMN suspended_by text
      CHECK (suspended_by IN ('administrator', 'subscription'))`
  yield* sql`
    UPDATE lm_licenses l SET suspended_by = CASE
      WHEN EXISTS (SELECT 1 FROM lm_subscriptions s WHERE s.license_id = l.id AND s.suspended_license) THEN 'subscription'
      ELSE 'administrator' END
    WHERE l.state = 'suspended'`
  yield* sql`ALTER TABLE lm_subscriptions DROP COLUMN suspended_license`
})
