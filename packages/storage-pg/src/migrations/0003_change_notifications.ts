/**
 * Migration 3: triggers that announce license and machine changes with NOTIFY on `lm_license_changed`
 * (payload: the license id), delivered at commit to every process listening (the validation caches of other
 * server processes). PostgreSQL folds duplicates within a transaction.
 * Frozen: this migration has shipped. Never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE FUNCTION lm_notify_license_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'lm_licenses' THEN
        PERFORM pg_notify('lm_license_changed', COALESCE(NEW.id, OLD.id)::text);
      ELSE
        PERFORM pg_notify('lm_license_changed', COALESCE(NEW.license_id, OLD.license_id)::text);
      END IF;
      RETURN NULL;
    END
    $$`
  yield* sql`CREATE TRIGGER lm_licenses_changed AFTER UPDATE OR DELETE ON lm_licenses FOR EACH ROW EXECUTE FUNCTION lm_notify_license_changed()`
  yield* sql`CREATE TRIGGER lm_machines_changed AFTER INSERT OR UPDATE OR DELETE ON lm_machines FOR EACH ROW EXECUTE FUNCTION lm_notify_license_changed()`
})
