/**
 * Analytics (CONTRACT §11) as pure functions: what an event-log entry counts as, the hourly counters kept as
 * the log is written (rollups), periods and buckets, dense series, and the anomaly rules with their thresholds.
 * Stores only add these counters up and filter on the numbers given here; nothing below is re-decided in SQL.
 */
import type { ActivityEntry } from "../activity/model.js"
import type { AnalyticsInterval, AnalyticsPeriod, AnomalyType } from "./model.js"

export const hourMillis = 3_600_000
export const dayMillis = 24 * hourMillis

/** The length of an overview period. */
export const periodMillis = (period: AnalyticsPeriod): number => {
  switch (period) {
    case "7d":
      return 7 * dayMillis
    case "30d":
      return 30 * dayMillis
    case "90d":
      return 90 * dayMillis
  }
}

/**
 * The first hour an overview period counts at `now` (its validations, activations and `top_licenses`): the
 * window is the period's last hours, the current one included (168 for 7 days), hour-granular (an hour's
 * counters count whole or not at all). Stores keep per-period `top_licenses` totals over the hours from this
 * start on, moved forward as time passes (`AnalyticsRepository.moveTopWindows`).
 */
export const periodStart = (period: AnalyticsPeriod, now: number): number => bucketStart(now, "hour") + hourMillis - periodMillis(period)

/** The width of a series bucket. */
export const intervalMillis = (interval: AnalyticsInterval): number => (interval === "hour" ? hourMillis : dayMillis)

/** The most buckets one series may have (CONTRACT §11). */
export const maxSeriesBuckets = 1000

/** The start of the UTC hour (or day) holding `at`. */
export const bucketStart = (at: number, interval: AnalyticsInterval): number => {
  const width = intervalMillis(interval)
  return Math.floor(at / width) * width
}

/** The results of a client call that are not refusals; every other result (an error code) is a refusal. */
export const successResults: ReadonlySet<string> = new Set(["valid", "activated", "already_active", "deactivated", "ok"])

/** Whether an entry is a refusal: any call (validate, activate, deactivate, heartbeat) that did not succeed. */
export const isRefusal = (entry: Pick<ActivityEntry, "result">): boolean => !successResults.has(entry.result)

/** Whether an entry is a validation (POST /validate), and then whether it answered `valid`. */
export const isValidation = (entry: Pick<ActivityEntry, "kind">): boolean => entry.kind === "validate"
export const isValidValidation = (entry: Pick<ActivityEntry, "kind" | "result">): boolean =>
  isValidation(entry) && entry.result === "valid"

/** Whether an entry is an activation that created a machine record: a new fingerprint on the license. */
export const isNewFingerprint = (entry: Pick<ActivityEntry, "kind" | "result">): boolean =>
  entry.kind === "activate" && entry.result === "activated"

/** Whether an entry counts as an activation in the overview (a new machine, or one re-activated). */
export const isActivation = (entry: Pick<ActivityEntry, "kind" | "result">): boolean => entry.kind === "activate" && entry.result === "activated"

/**
 * What the hourly counters are kept per: each license (`license`, with {@link noLicense} for calls whose key
 * matched none: license ids start at 1), and each product (`product`, {@link noProduct} for licenses without one:
 * a product id is never negative), so that the totals
 * over every license are the sum over the products.
 */
export type RollupScope = "license" | "product"
export const noLicense = 0
export const noProduct = -1

/** The counters of one hour. */
export interface HourCounts {
  readonly valid: number
  readonly invalid: number
  readonly refused: number
  readonly activations: number
}

/** One row of the hourly counters: what a store adds to what it holds for (scope, scopeId, hour). */
export interface HourlyCount extends HourCounts {
  readonly scope: RollupScope
  readonly scopeId: number
  /** The start of the UTC hour (epoch ms). */
  readonly hour: number
}

/** A store's sum of the counters of one hour (over one scope id, or over all of a scope). */
export interface HourTotals extends HourCounts {
  readonly hour: number
}

/**
 * The counters a batch of event-log entries adds, one row per (scope, scopeId, hour) touched: what a store
 * upserts in the same write as the entries themselves.
 */
export const hourlyCountsOf = (entries: ReadonlyArray<ActivityEntry>): ReadonlyArray<HourlyCount> => {
  const rows = new Map<string, { scope: RollupScope; scopeId: number; hour: number; valid: number; invalid: number; refused: number; activations: number }>()
  const add = (scope: RollupScope, scopeId: number, hour: number, entry: ActivityEntry) => {
    const id = `${scope}:${scopeId}:${hour}`
    let row = rows.get(id)
    if (row === undefined) {
      row = { scope, scopeId, hour, valid: 0, invalid: 0, refused: 0, activations: 0 }
      rows.set(id, row)
    }
    if (isValidation(entry)) {
      if (isValidValidation(entry)) row.valid++
      else row.invalid++
    }
    if (isRefusal(entry)) row.refused++
    if (isActivation(entry)) row.activations++
  }
  for (const entry of entries) {
    const hour = bucketStart(entry.at, "hour")
    add("license", entry.licenseId ?? noLicense, hour, entry)
    add("product", entry.productId ?? noProduct, hour, entry)
  }
  return [...rows.values()]
}

/** Adds counters. */
export const sumCounts = (rows: ReadonlyArray<HourCounts>): HourCounts =>
  rows.reduce(
    (a, r) => ({ valid: a.valid + r.valid, invalid: a.invalid + r.invalid, refused: a.refused + r.refused, activations: a.activations + r.activations }),
    { valid: 0, invalid: 0, refused: 0, activations: 0 }
  )

/** One bucket of a validation series. */
export interface SeriesPoint {
  readonly t: number
  readonly total: number
  readonly valid: number
  readonly invalid: number
}

/** The buckets of [from, to): starts from the bucket holding `from` to the one holding `to - 1`. */
export const bucketCount = (from: number, to: number, interval: AnalyticsInterval): number =>
  to <= from ? 0 : (bucketStart(to - 1, interval) - bucketStart(from, interval)) / intervalMillis(interval) + 1

/**
 * The dense series of [from, to) in `interval` buckets from the hourly sums: every bucket present, empty ones
 * zero. Hours outside the range are ignored.
 */
export const denseSeries = (
  hours: ReadonlyArray<HourTotals>,
  from: number,
  to: number,
  interval: AnalyticsInterval
): ReadonlyArray<SeriesPoint> => {
  const width = intervalMillis(interval)
  const first = bucketStart(from, interval)
  const n = bucketCount(from, to, interval)
  const valid = new Array<number>(n).fill(0)
  const invalid = new Array<number>(n).fill(0)
  for (const h of hours) {
    if (h.hour < bucketStart(from, "hour") || h.hour >= to) continue
    const i = Math.floor((h.hour - first) / width)
    if (i < 0 || i >= n) continue
    valid[i]! += h.valid
    invalid[i]! += h.invalid
  }
  return valid.map((v, i) => ({ t: first + i * width, total: v + invalid[i]!, valid: v, invalid: invalid[i]! }))
}

/** The thresholds of the anomaly rules (CONTRACT §11 defaults; `LM_ANOMALY_*` settings change them). */
export interface AnomalyThresholds {
  /** New fingerprints on a license within 24 h (default 5). */
  readonly fingerprintChurn: number
  /** Distinct client addresses on a license within 24 h (default 10). */
  readonly ipChurn: number
  /** How many times its 7-day hourly mean an hour's validations must exceed (default 3)… */
  readonly spikeFactor: number
  /** …and the fewest validations in that hour (default 20). */
  readonly spikeMinimum: number
  /** Refusals on a license within one hour (default 20). */
  readonly failedBurst: number
}

export const defaultAnomalyThresholds: AnomalyThresholds = {
  fingerprintChurn: 5,
  ipChurn: 10,
  spikeFactor: 3,
  spikeMinimum: 20,
  failedBurst: 20
}

/** The window the churn rules count over. */
export const churnWindowMillis = dayMillis
/** The window a spike's hour is compared with. */
export const spikeBaselineMillis = 7 * dayMillis
/**
 * The hours the hourly rules look at: the current hour and the one before, so an anomaly of the last full hour
 * stays reported for a while into the next one.
 */
export const recentHoursFrom = (now: number): number => bucketStart(now, "hour") - hourMillis

/** An anomaly as found (before the license key is looked up). */
export interface AnomalyFinding {
  readonly licenseId: number
  readonly type: AnomalyType
  readonly detail: string
}

/** Whether an hour's validations are a spike over the license's 7-day total (mean = total / 168 hours). */
export const isValidationSpike = (hourValidations: number, weekValidations: number, t: AnomalyThresholds): boolean =>
  hourValidations >= t.spikeMinimum && hourValidations > t.spikeFactor * (weekValidations / (spikeBaselineMillis / hourMillis))

/** The human-readable detail of each kind. */
export const anomalyDetail = {
  fingerprint_churn: (n: number) => `${n} new fingerprints in 24 hours`,
  ip_churn: (n: number) => `${n} IP addresses in 24 hours`,
  validation_spike: (n: number, mean: number) => `${n} validations in an hour, ${mean.toFixed(2)} per hour over 7 days`,
  failed_validation_burst: (n: number) => `${n} refusals in an hour`
} as const

/**
 * How long a reported anomaly of one kind on one license stays known: within it the same anomaly is not
 * announced again (`anomaly.detected` is emitted once), after it a new occurrence is.
 */
export const anomalyQuietMillis = dayMillis
