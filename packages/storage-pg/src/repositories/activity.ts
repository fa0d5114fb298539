/**
 * The domain's `ActivityLog` (the event log, for analytics) on `lm_activity`, written in batches; each
 * statement also adds the batch's hourly counters to `lm_activity_hourly` (the rollups the analytics read) and
 * its validations to the per-period top-license totals `lm_top_totals`.
 */
import { Context, Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Analytics, Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { chunk, Count, date, oneOf } from "./rows.js"

/**
 * Most event-log rows written by one INSERT (default 1000). Embedded PGlite runs each statement on the server's
 * own thread, so a large insert stalls every request for its whole duration: its store writes smaller ones,
 * between which requests are answered.
 */
export const EventLogRowsPerInsert = Context.Reference<number>("@lm/storage-pg/EventLogRowsPerInsert", {
  defaultValue: () => 1000
})

const count = oneOf(Count, "a count")

/** The event log's columns, each with its array type and its value in an entry: the one list of the insert. */
const activityColumns: ReadonlyArray<readonly [column: string, type: string, value: (e: Model.ActivityEntry) => string | number | null]> = [
  ["kind", "text", (e) => e.kind],
  ["license_id", "bigint", (e) => e.licenseId],
  ["license_key", "text", (e) => e.licenseKey],
  ["machine_id", "bigint", (e) => e.machineId],
  ["fingerprint", "text", (e) => e.fingerprint],
  ["ip_address", "text", (e) => e.ipAddress],
  ["app_version", "text", (e) => e.appVersion],
  ["result", "text", (e) => e.result],
  ["at", "timestamptz", (e) => new Date(e.at).toISOString()],
  ["product_id", "bigint", (e) => e.productId ?? null]
]

const activityColumnNames = activityColumns.map(([column]) => column).join(", ")

/**
 * A PostgreSQL array literal of `values` (`{"a","b",NULL}`): each text double-quoted with `"` and `\` escaped,
 * a null as `NULL`, a number as written. Sent as one text parameter and cast to the column's array type.
 */
const arrayLiteral = (batch: ReadonlyArray<Model.ActivityEntry>, value: (e: Model.ActivityEntry) => string | number | null): string => {
  let text = "{"
  for (let i = 0; i < batch.length; i++) {
    const v = value(batch[i]!)
    if (i > 0) text += ","
    text += v === null ? "NULL" : typeof v === "number" ? String(v) : `"${String(v).replace(/["\\]/g, "\\$&")}"`
  }
  return `${text}}`
}

/**
 * The hourly counters of a batch as one JSON parameter, sorted by their key so that concurrent writers lock the
 * counter rows in one order (no deadlock between two batches touching the same hours).
 */
const countsJson = (batch: ReadonlyArray<Model.ActivityEntry>): string =>
  JSON.stringify(
    [...Analytics.hourlyCountsOf(batch)]
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.scopeId - b.scopeId || a.hour - b.hour))
      .map((c) => ({
        scope: c.scope,
        scope_id: c.scopeId,
        hour: new Date(c.hour).toISOString(),
        valid: c.valid,
        invalid: c.invalid,
        refused: c.refused,
        activations: c.activations
      }))
  )

export const layer = Layer.effect(
  Ports.ActivityLog,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    const rowsPerInsert = Math.max(1, yield* EventLogRowsPerInsert)

    /**
     * Many rows in one statement with one parameter per column: an array literal each, zipped into rows by
     * `unnest`. The statement text stays the same whatever the number of rows, so neither the client nor the
     * server builds or parses a statement with thousands of placeholders. (Arrays rather than one JSON array of
     * row objects, `json_to_recordset`: the rows' insert takes 15–30 % less of the database's CPU per row for 500
     * rows on PGlite, the whole statement about 10 %; bench/README.md, issue 32.)
     */
    const insertActivity = (batch: ReadonlyArray<Model.ActivityEntry>) => {
      // The entries and their counters in one statement: both are written or neither.
      const arrays = activityColumns.map(([, type, value]) => sql`${arrayLiteral(batch, value)}::${sql.literal(type)}[]`)
      const entries = sql`
          INSERT INTO lm_activity (${sql.literal(activityColumnNames)})
          SELECT * FROM unnest(${sql.csv(arrays)})`
      // The per-period top-license totals (migration 0012) get the validations of the hours inside each window:
      // the windows are locked FOR SHARE until commit, so the mover (FOR UPDATE) never takes an hour out while
      // a batch that added to it is in flight, and a batch never adds an hour the mover has already taken out.
      return sql`
        WITH entries AS (${entries}),
        counts AS (
          SELECT * FROM json_to_recordset(${countsJson(batch)}::json)
            AS c(scope text, scope_id bigint, hour timestamptz, valid bigint, invalid bigint, refused bigint, activations bigint)
        ),
        hourly AS (
          INSERT INTO lm_activity_hourly (scope, scope_id, hour, valid, invalid, refused, activations)
          SELECT scope, scope_id, hour, valid, invalid, refused, activations FROM counts
          ON CONFLICT (scope, scope_id, hour) DO UPDATE SET
            valid = lm_activity_hourly.valid + EXCLUDED.valid,
            invalid = lm_activity_hourly.invalid + EXCLUDED.invalid,
            refused = lm_activity_hourly.refused + EXCLUDED.refused,
            activations = lm_activity_hourly.activations + EXCLUDED.activations
        ),
        windows AS (SELECT period, window_start FROM lm_top_windows ORDER BY period FOR SHARE)
        INSERT INTO lm_top_totals (period, license_id, validations)
        SELECT w.period, c.scope_id, sum(c.valid + c.invalid)
        FROM counts c JOIN windows w ON c.hour >= w.window_start
        WHERE c.scope = 'license' AND c.scope_id <> ${Analytics.noLicense} AND c.valid + c.invalid > 0
        GROUP BY w.period, c.scope_id
        ORDER BY w.period, c.scope_id
        ON CONFLICT (period, license_id) DO UPDATE SET validations = lm_top_totals.validations + EXCLUDED.validations`
    }

    return Ports.ActivityLog.of({
      // A batch the store refuses (e.g. text it cannot hold) is retried entry by entry by the recorder, and a
      // single entry is written with ordinary parameters, as any other row.
      record: (entries) =>
        entries.length === 0
          ? Effect.void
          : Effect.forEach(chunk(entries, rowsPerInsert), insertActivity, { discard: true }).pipe(orUnavailable),
      count: (filter) =>
        (filter.licenseId === undefined
          ? sql`SELECT count(*) AS n FROM lm_activity`
          : sql`SELECT count(*) AS n FROM lm_activity WHERE license_id = ${filter.licenseId}`).pipe(
            Effect.flatMap(count),
            Effect.map((r) => r.n),
            orUnavailable
          ),
      // Oldest first in id (write) order: the primary key is walked from its start, where the old rows are, so
      // a batch reads little more than what it deletes (the BRIN index on `at` gives no order).
      prune: (olderThan, limit) =>
        limit < 1
          ? Effect.succeed(0)
          : sql`
            WITH gone AS (
              DELETE FROM lm_activity WHERE id IN (
                SELECT id FROM lm_activity WHERE at < ${date(olderThan)} ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED
              )
              RETURNING 1
            )
            SELECT count(*) AS n FROM gone`.pipe(Effect.flatMap(count), Effect.map((r) => r.n), orUnavailable)
    })
  })
)
