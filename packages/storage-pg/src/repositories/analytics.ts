/**
 * The domain's `AnalyticsRepository`: sums of the hourly counters in `lm_activity_hourly` (written with the
 * event log, see `activity.ts`), the per-period top-license totals in `lm_top_totals` (migration 0012), distinct counts over the recent event log, seat and app-version counts over
 * licenses and machines, and the announced anomalies in `lm_anomalies`. Only sums, filters and orders: every
 * threshold and window comes from the domain.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Analytics, Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { date, Int8, iso, oneOf, rowsOf, tableOf, Timestamp } from "./rows.js"
import { holdsSeat } from "./seats.js"

const HourRow = Schema.Struct({ hour: Timestamp, valid: Int8, invalid: Int8, refused: Int8, activations: Int8 })
const hourRows = rowsOf(HourRow, "lm_activity_hourly")
const topRows = rowsOf(Schema.Struct({ license_id: Int8, validations: Int8 }), "lm_top_totals")
const windowRows = rowsOf(Schema.Struct({ period: Schema.String, window_start: Timestamp }), "lm_top_windows")
const busyRows = rowsOf(Schema.Struct({ license_id: Int8, hour: Timestamp, count: Int8 }), "lm_activity_hourly")
const distinctRows = rowsOf(Schema.Struct({ license_id: Int8, count: Int8 }), "lm_activity")
const seatsRow = oneOf(Schema.Struct({ active_machines: Int8, total_seats: Int8 }), "lm_licenses")
const versionRows = rowsOf(Schema.Struct({ app_version: Schema.NullOr(Schema.String), machines: Int8 }), "lm_machines")
/** A row of `lm_anomalies`. */
const anomalies = tableOf(Model.AnomalyRecord)
const anomalyRows = rowsOf(anomalies.Row, "lm_anomalies")

export const layer = Layer.effect(
  Ports.AnalyticsRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    const noLicense = Analytics.noLicense

    /** Moves the windows that differ from `windows` under the lock (see `moveTopWindows`). */
    const move = (windows: ReadonlyArray<{ readonly period: string; readonly from: number }>) =>
      sql.withTransaction(Effect.gen(function*() {
        const held = yield* sql`SELECT period, window_start FROM lm_top_windows ORDER BY period FOR UPDATE`.pipe(
          Effect.flatMap(windowRows)
        )
        for (const w of windows) {
          const current = held.find((h) => h.period === w.period)?.window_start
          if (current === undefined || current === w.from) continue
          // Forward: the hours [current, from) leave the window; back: the hours [from, current) enter it.
          const [lo, hi, sign] = w.from > current ? [current, w.from, -1] : [w.from, current, 1]
          yield* sql`
            INSERT INTO lm_top_totals (period, license_id, validations)
            SELECT ${w.period}, scope_id, ${sign} * sum(valid + invalid)
            FROM lm_activity_hourly
            WHERE scope = 'license' AND scope_id <> ${noLicense} AND hour >= ${date(lo)} AND hour < ${date(hi)}
            GROUP BY scope_id HAVING sum(valid + invalid) > 0
            ORDER BY scope_id
            ON CONFLICT (period, license_id) DO UPDATE SET validations = lm_top_totals.validations + EXCLUDED.validations`
          if (sign < 0) yield* sql`DELETE FROM lm_top_totals WHERE period = ${w.period} AND validations <= 0`
          yield* sql`UPDATE lm_top_windows SET window_start = ${date(w.from)} WHERE period = ${w.period}`
        }
      }))

    return Ports.AnalyticsRepository.of({
      hourly: (q) =>
        sql`
          SELECT hour, sum(valid)::int8 AS valid, sum(invalid)::int8 AS invalid, sum(refused)::int8 AS refused,
                 sum(activations)::int8 AS activations
          FROM lm_activity_hourly
          WHERE scope = ${q.scope} ${q.scopeId === undefined ? sql`` : sql`AND scope_id = ${q.scopeId}`}
            AND hour >= ${date(q.from)} AND hour < ${date(q.to)}
          GROUP BY hour ORDER BY hour`.pipe(Effect.flatMap(hourRows), orUnavailable),
      // An index read of `lm_top_totals_rank`: the totals are kept by the event log's writer and `moveTopWindows`.
      topLicenses: (period, limit) =>
        sql`
          SELECT license_id, validations FROM lm_top_totals
          WHERE period = ${period} AND validations > 0
          ORDER BY validations DESC, license_id LIMIT ${Math.max(0, limit)}`.pipe(
            Effect.flatMap(topRows),
            Effect.map((rows) => rows.map((r) => ({ licenseId: r.license_id, validations: r.validations }))),
            orUnavailable
          ),
      // The windows are locked FOR UPDATE (the writer takes them FOR SHARE): a second mover waits, then finds
      // them moved and does nothing; a batch in flight commits before the hours it added to are taken out. A
      // first look without a lock skips all that when nothing is to move (most calls: a window moves hourly).
      moveTopWindows: (windows) =>
        Effect.gen(function*() {
          const seen = yield* sql`SELECT period, window_start FROM lm_top_windows`.pipe(Effect.flatMap(windowRows))
          return windows.some((w) => seen.some((h) => h.period === w.period && h.window_start !== w.from))
        }).pipe(
          Effect.flatMap((moving) => (moving ? move(windows) : Effect.void)),
          orUnavailable
        ),
      busyHours: (q) => {
        const count = q.counter === "refused" ? sql`refused` : sql`(valid + invalid)`
        return sql`
          SELECT scope_id AS license_id, hour, ${count}::int8 AS count
          FROM lm_activity_hourly
          WHERE scope = 'license' AND scope_id <> ${noLicense} AND hour >= ${date(q.from)} AND ${count} >= ${q.atLeast}
          ORDER BY scope_id, hour`.pipe(
            Effect.flatMap(busyRows),
            Effect.map((rows) => rows.map((r) => ({ licenseId: r.license_id, hour: r.hour, count: r.count }))),
            orUnavailable
          )
      },
      distinctPerLicense: (q) => {
        const column = q.column === "fingerprint" ? sql`fingerprint` : sql`ip_address`
        return sql`
          SELECT license_id, count(DISTINCT ${column})::int8 AS count
          FROM lm_activity
          WHERE at >= ${date(q.since)} AND license_id IS NOT NULL AND ${column} IS NOT NULL
            ${q.kind === undefined ? sql`` : sql`AND kind = ${q.kind}`}
            ${q.result === undefined ? sql`` : sql`AND result = ${q.result}`}
          GROUP BY license_id HAVING count(DISTINCT ${column}) >= ${q.atLeast}
          ORDER BY license_id`.pipe(
            Effect.flatMap(distinctRows),
            Effect.map((rows) => rows.map((r) => ({ licenseId: r.license_id, count: r.count }))),
            orUnavailable
          )
      },
      seats: (states, at) =>
        sql`
          SELECT
            (SELECT count(*) FROM lm_machines m JOIN lm_licenses l ON l.id = m.license_id
             WHERE l.state IN ${sql.in(states)} AND l.max_activations IS NOT NULL
               AND ${holdsSeat(sql, "m", at)})::int8 AS active_machines,
            (SELECT coalesce(sum(max_activations), 0) FROM lm_licenses
             WHERE state IN ${sql.in(states)} AND max_activations IS NOT NULL)::int8 AS total_seats`.pipe(
            Effect.flatMap(seatsRow),
            Effect.map((r) => ({ activeMachines: r.active_machines, totalSeats: r.total_seats })),
            orUnavailable
          ),
      appVersions: (at) =>
        sql`
          SELECT m.app_version, count(*)::int8 AS machines FROM lm_machines m
          WHERE ${holdsSeat(sql, "m", at)}
          GROUP BY m.app_version ORDER BY machines DESC, m.app_version COLLATE "C" NULLS LAST`.pipe(
            Effect.flatMap(versionRows),
            Effect.map((rows) => rows.map((r) => ({ appVersion: r.app_version, machines: r.machines }))),
            orUnavailable
          ),
      // A new (license, type) is inserted; a known one announced before `since` is renewed; the others are left
      // (ON CONFLICT … WHERE returns no row for them), so each anomaly is answered to one caller only.
      recordAnomalies: (found, since) =>
        found.length === 0
          ? Effect.succeed([])
          : sql`
            INSERT INTO lm_anomalies (license_id, type, detected_at)
            SELECT license_id, type, detected_at
            FROM json_to_recordset(${
            JSON.stringify(found.map((a) => anomalies.columns(a, iso)))
          }::json)
              AS a(license_id bigint, type text, detected_at timestamptz)
            ORDER BY license_id, type
            ON CONFLICT (license_id, type) DO UPDATE SET detected_at = EXCLUDED.detected_at
              WHERE lm_anomalies.detected_at < ${date(since)}
            RETURNING license_id, type, detected_at`.pipe(Effect.flatMap(anomalyRows), orUnavailable),
      anomaliesSince: (since) =>
        sql`SELECT license_id, type, detected_at FROM lm_anomalies WHERE detected_at >= ${date(since)}`.pipe(
          Effect.flatMap(anomalyRows),
          orUnavailable
        )
    })
  })
)
