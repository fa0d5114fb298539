/**
 * Migration 12: `top_licenses` from maintained totals (issue 17). Summing a period's per-license hourly counters
 * on each overview read ~770,000 rows for 7 days (~10,000,000 for 90) at 10,000,000 events. Instead:
 * - `lm_top_windows`: per overview period, the first hour its totals count (`Analytics.periodStart`); hours before
 *   it have been taken out. The event log's writer locks these rows FOR SHARE and the mover FOR UPDATE, so an hour
 *   is never added after the mover has taken it out.
 * - `lm_top_totals`: per period and license, the validations (valid + invalid) of the hours from that start on,
 *   added to by the writer in the statement that adds the hourly counters; `(period, validations DESC,
 *   license_id)` makes the top ten an index read.
 * The windows start at the current hour's window (the same formula as `Analytics.periodStart`, whose period
 * lengths are written out here as this file imports nothing); the totals are backfilled from the hourly counters.
 * Frozen once shipped: never edit it (test/migrations.test.ts checks its SQL); add a new one.
 * Imports nothing but effect, so later changes to the code cannot change what it does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE lm_top_windows (
      period text PRIMARY KEY,
      window_start timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE lm_top_totals (
      period text NOT NULL,
      license_id bigint NOT NULL,
      validations bigint NOT NULL,
      PRIMARY KEY (period, license_id)
    )`
  yield* sql`
    INSERT INTO lm_top_windows (period, window_start)
    SELECT period, date_trunc('hour', now(), 'UTC') + interval '1 hour' - length
    FROM (VALUES ('7d', interval '7 days'), ('30d', interval '30 days'), ('90d', interval '90 days')) AS p(period, length)`
  yield* sql`
    INSERT INTO lm_top_totals (period, license_id, validations)
    SELECT w.period, h.scope_id, sum(h.valid + h.invalid)
    FROM lm_top_windows w JOIN lm_activity_hourly h ON h.scope = 'license' AND h.scope_id <> 0 AND h.hour >= w.window_start
    GROUP BY w.period, h.scope_id
    HAVING sum(h.valid + h.invalid) > 0`
  yield* sql`CREATE INDEX lm_top_totals_rank ON lm_top_totals (period, validations DESC, license_id)`
})
