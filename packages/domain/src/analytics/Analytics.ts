/**
 * Analytics (CONTRACT §11): the overview of a period, validation series, anomalies and expiring licenses, read
 * from the hourly counters the event log keeps (never by scanning raw events, except the 24-hour churn rules)
 * and from the licenses and machines. A newly detected anomaly is announced once with `anomaly.detected`.
 */
import { Clock, Context, type Duration, Effect, Layer, Schedule } from "effect"
import { Licenses, statusFilter } from "../licensing/Licenses.js"
import { type LicenseNotFound, licenseNotFound } from "../licensing/errors.js"
import { parseKey } from "../licensing/keys.js"
import type { LicenseView } from "../licensing/machine.js"
import { type LicenseStatus, licenseStatuses } from "../licensing/model.js"
import { LicenseRepository } from "../licensing/ports.js"
import { logRoundFailure } from "../shared/background.js"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { formatAmount } from "../shared/money.js"
import { EventOutbox, Store } from "../shared/ports.js"
import { monthlyRecurring, mrrStatuses } from "../subscriptions/billing.js"
import { subscriptionStatuses } from "../subscriptions/model.js"
import { SubscriptionRepository, type SubscriptionTotal } from "../subscriptions/ports.js"
import { type AnalyticsInterval, type AnalyticsPeriod, analyticsPeriods, type Anomaly, type AnomalyType } from "./model.js"
import { AnalyticsRepository } from "./ports.js"
import {
  anomalyDetail,
  type AnomalyFinding,
  anomalyQuietMillis,
  type AnomalyThresholds,
  bucketCount,
  churnWindowMillis,
  dayMillis,
  defaultAnomalyThresholds,
  denseSeries,
  isValidationSpike,
  maxSeriesBuckets,
  periodStart,
  recentHoursFrom,
  type SeriesPoint,
  spikeBaselineMillis,
  sumCounts
} from "./rules.js"

/** The anomaly thresholds in force (CONTRACT §11 defaults unless the settings change them). */
export const AnalyticsSettings = Context.Reference<AnomalyThresholds>("@lm/domain/AnalyticsSettings", {
  defaultValue: () => defaultAnomalyThresholds
})

/** Subscription figures of the overview. */
export interface SubscriptionFigures {
  readonly byStatus: Readonly<Record<string, number>>
  /** Monthly recurring revenue per currency, as the wire's decimal string (the subscriptions' money rules format it). */
  readonly mrr: ReadonlyArray<{ readonly currency: string; readonly amount: string }>
}

/**
 * Where the overview gets its subscription figures, read when the Analytics layer is built: the engine provides
 * {@link layerSubscriptionFigures} (the store's subscriptions); without it, none (an empty `by_status` and `mrr`).
 */
export const SubscriptionFiguresSource = Context.Reference<{ readonly figures: (now: number) => Effect.Effect<SubscriptionFigures, StorageUnavailable> }>(
  "@lm/domain/SubscriptionFiguresSource",
  { defaultValue: () => ({ figures: () => Effect.succeed({ byStatus: {}, mrr: [] }) }) }
)

/**
 * The subscriptions' figures from the store's totals: every status counted (0 when none), and MRR per currency
 * (`Billing.monthlyRecurring` over the statuses of `Billing.mrrStatuses`: `active` and `pending-cancel`, which
 * pays until its period ends; `trial`, `pending`, `on-hold` and the ended ones bring nothing in).
 */
export const subscriptionFiguresOf = (totals: ReadonlyArray<SubscriptionTotal>): SubscriptionFigures => {
  const byStatus: Record<string, number> = Object.fromEntries(subscriptionStatuses.map((s) => [s, 0]))
  for (const t of totals) byStatus[t.status] = (byStatus[t.status] ?? 0) + t.count
  const mrr = monthlyRecurring(totals.filter((t) => mrrStatuses.has(t.status)))
  return { byStatus, mrr: mrr.map((m) => ({ currency: m.currency, amount: formatAmount(m.minor, m.currency) })) }
}

/** Feeds {@link SubscriptionFiguresSource} from the subscriptions' store. */
export const layerSubscriptionFigures = Layer.effect(
  SubscriptionFiguresSource,
  Effect.map(SubscriptionRepository, (repo) => ({ figures: () => Effect.map(repo.totals, subscriptionFiguresOf) }))
)

/** How many licenses the overview's `top_licenses` lists. */
export const topLicensesCount = 10
/** The most licenses GET /analytics/expiring lists. */
export const maxExpiring = 1000

export interface Overview {
  readonly licenses: { readonly total: number; readonly byStatus: Readonly<Record<LicenseStatus, number>> }
  readonly seats: { readonly activeMachines: number; readonly totalSeats: number; readonly utilization: number | null }
  readonly validations: { readonly total: number; readonly valid: number; readonly invalid: number }
  readonly activations: number
  readonly subscriptions: SubscriptionFigures
  readonly expiring: { readonly in7Days: number; readonly in30Days: number }
  readonly appVersions: ReadonlyArray<{ readonly appVersion: string | null; readonly machines: number }>
  readonly topLicenses: ReadonlyArray<{ readonly licenseKey: string; readonly validations: number }>
}

export interface SeriesQuery {
  readonly from?: number | undefined
  readonly to?: number | undefined
  readonly interval?: AnalyticsInterval | undefined
  readonly licenseKey?: string | undefined
  readonly productId?: number | undefined
}

export interface Series {
  readonly series: ReadonlyArray<SeriesPoint>
  readonly interval: AnalyticsInterval
  readonly from: number
  readonly to: number
}

export type { Anomaly } from "./model.js"

/** A series without `from` covers the 30 days before `to`. */
export const defaultSeriesDays = 30

export class Analytics extends Context.Service<Analytics, {
  readonly overview: (period: AnalyticsPeriod) => Effect.Effect<Overview, StorageUnavailable>
  readonly validations: (query: SeriesQuery) => Effect.Effect<Series, InvalidParam | LicenseNotFound | StorageUnavailable>
  /** The anomalies current now; the ones not announced in the last day are announced (`anomaly.detected`). */
  readonly anomalies: Effect.Effect<ReadonlyArray<Anomaly>, StorageUnavailable>
  /** Runs the anomaly rules and announces the new ones (what the background job does); returns how many. */
  readonly detectOnce: Effect.Effect<number, StorageUnavailable>
  /**
   * Moves every period's `top_licenses` window to now (`periodStart`): the store takes the hours that left it
   * out of its totals. The background job does it every round, so the overview's own move is seldom more than a
   * look at the windows.
   */
  readonly moveTopWindows: Effect.Effect<void, StorageUnavailable>
  readonly expiring: (days: number) => Effect.Effect<ReadonlyArray<LicenseView>, InvalidParam | StorageUnavailable>
}>()("@lm/domain/Analytics") {
  static readonly layer = Layer.effect(
    Analytics,
    Effect.gen(function*() {
      const repo = yield* AnalyticsRepository
      const licenseRepo = yield* LicenseRepository
      const licenses = yield* Licenses
      const store = yield* Store
      const outbox = yield* EventOutbox
      const subscriptionSource = yield* SubscriptionFiguresSource

      /** Licenses per status and expiring within 7 and 30 days: every count of the overview in one pass of the store. */
      const licenseCounts = (now: number) =>
        Effect.map(
          licenseRepo.countEach([
            ...licenseStatuses.map((status) => statusFilter(status, now)),
            { expiresAfter: now, expiresBefore: now + 7 * dayMillis },
            { expiresAfter: now, expiresBefore: now + 30 * dayMillis }
          ]),
          (counts) => ({
            byStatus: licenseStatuses.map((status, i) => [status, counts[i]!] as const),
            in7Days: counts[licenseStatuses.length]!,
            in30Days: counts[licenseStatuses.length + 1]!
          })
        )

      const moveWindowsAt = (now: number) =>
        repo.moveTopWindows(analyticsPeriods.map((period) => ({ period, from: periodStart(period, now) })))
      const moveTopWindows = Effect.flatMap(Clock.currentTimeMillis, moveWindowsAt).pipe(Effect.withSpan("Analytics.moveTopWindows"))

      const overview = Effect.fn("Analytics.overview")(function*(period: AnalyticsPeriod) {
        const now = yield* Clock.currentTimeMillis
        const from = periodStart(period, now)
        // Independent reads, run at once: on a pooled store their round trips overlap.
        const figures = yield* Effect.all({
          counts: licenseCounts(now),
          seats: repo.seats(["issued"], now),
          hours: repo.hourly({ scope: "product", from, to: now + 1 }),
          subscriptions: subscriptionSource.figures(now),
          appVersions: repo.appVersions(now),
          // The windows are moved to now first, so the totals are exact whatever the background job's lag.
          top: Effect.flatMap(Effect.andThen(moveWindowsAt(now), repo.topLicenses(period, topLicensesCount)), (top) =>
            Effect.forEach(top, (t) =>
              Effect.map(licenseRepo.findById(t.licenseId), (license) =>
                license === undefined ? undefined : { licenseKey: license.key, validations: t.validations }), { concurrency: "unbounded" }))
        }, { concurrency: "unbounded" })
        const byStatus = Object.fromEntries(figures.counts.byStatus) as Record<LicenseStatus, number>
        const { appVersions, seats, subscriptions } = figures
        const { in30Days, in7Days } = figures.counts
        const counts = sumCounts(figures.hours)
        const topLicenses = figures.top
        return {
          // Every license has exactly one status: the total is their sum.
          licenses: { total: figures.counts.byStatus.reduce((n, [, count]) => n + count, 0), byStatus },
          seats: { ...seats, utilization: seats.totalSeats === 0 ? null : seats.activeMachines / seats.totalSeats },
          validations: { total: counts.valid + counts.invalid, valid: counts.valid, invalid: counts.invalid },
          activations: counts.activations,
          subscriptions,
          expiring: { in7Days, in30Days },
          appVersions,
          topLicenses: topLicenses.filter((t) => t !== undefined)
        } satisfies Overview
      })

      const validations = Effect.fn("Analytics.validations")(function*(query: SeriesQuery) {
        const now = yield* Clock.currentTimeMillis
        const interval = query.interval ?? "day"
        const to = query.to ?? now
        const from = query.from ?? to - defaultSeriesDays * dayMillis
        if (!(from < to)) return yield* invalidParam("from", "must be before to")
        if (bucketCount(from, to, interval) > maxSeriesBuckets) {
          return yield* invalidParam(query.from === undefined ? "to" : "from", `the range holds more than ${maxSeriesBuckets} ${interval} buckets`)
        }
        const range = { from: from - (from % 3_600_000), to }
        let hours
        if (query.licenseKey !== undefined) {
          const license = yield* licenseRepo.findByKey(yield* Effect.fromResult(parseKey(query.licenseKey)))
          if (license === undefined) return yield* licenseNotFound()
          // A license of another product than the one asked for has no validations of that product.
          hours = query.productId !== undefined && license.productId !== query.productId
            ? []
            : yield* repo.hourly({ scope: "license", scopeId: license.id, ...range })
        } else if (query.productId !== undefined) {
          hours = yield* repo.hourly({ scope: "product", scopeId: query.productId, ...range })
        } else {
          hours = yield* repo.hourly({ scope: "product", ...range })
        }
        return { series: denseSeries(hours, from, to, interval), interval, from, to } satisfies Series
      })

      /** The anomalies the rules find now (CONTRACT §11), before license keys are looked up. */
      const findAnomalies = Effect.fnUntraced(function*(now: number, t: AnomalyThresholds) {
        const found: Array<AnomalyFinding> = []
        const since = now - churnWindowMillis
        for (const row of yield* repo.distinctPerLicense({ since, column: "fingerprint", kind: "activate", result: "activated", atLeast: t.fingerprintChurn })) {
          found.push({ licenseId: row.licenseId, type: "fingerprint_churn", detail: anomalyDetail.fingerprint_churn(row.count) })
        }
        for (const row of yield* repo.distinctPerLicense({ since, column: "ip_address", atLeast: t.ipChurn })) {
          found.push({ licenseId: row.licenseId, type: "ip_churn", detail: anomalyDetail.ip_churn(row.count) })
        }
        const recent = recentHoursFrom(now)
        const busiest = (rows: ReadonlyArray<{ readonly licenseId: number; readonly count: number }>) => {
          const max = new Map<number, number>()
          for (const r of rows) max.set(r.licenseId, Math.max(max.get(r.licenseId) ?? 0, r.count))
          return [...max].sort((a, b) => a[0] - b[0])
        }
        for (const [licenseId, count] of busiest(yield* repo.busyHours({ from: recent, counter: "validations", atLeast: t.spikeMinimum }))) {
          const week = sumCounts(yield* repo.hourly({ scope: "license", scopeId: licenseId, from: recent - spikeBaselineMillis, to: recent }))
          const weekValidations = week.valid + week.invalid
          if (isValidationSpike(count, weekValidations, t)) {
            found.push({ licenseId, type: "validation_spike", detail: anomalyDetail.validation_spike(count, weekValidations / 168) })
          }
        }
        for (const [licenseId, count] of busiest(yield* repo.busyHours({ from: recent, counter: "refused", atLeast: t.failedBurst }))) {
          found.push({ licenseId, type: "failed_validation_burst", detail: anomalyDetail.failed_validation_burst(count) })
        }
        return found
      })

      /** Finds the current anomalies, records and announces the new ones; returns them and how many were new. */
      const detect = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const found = yield* findAnomalies(now, yield* AnalyticsSettings)
        const withKeys = yield* Effect.forEach(found, (f) =>
          Effect.map(licenseRepo.findById(f.licenseId), (license) => (license === undefined ? undefined : { ...f, license })))
        const current = withKeys.filter((f) => f !== undefined)
        const since = now - anomalyQuietMillis
        // Record and announce the new ones in one transaction: the event commits with the record, once.
        const known = yield* store.transaction(
          Effect.gen(function*() {
            const fresh = yield* repo.recordAnomalies(current.map((f) => ({ licenseId: f.licenseId, type: f.type, detectedAt: now })), since)
            const events: Array<DomainEvent> = fresh.flatMap((r) => {
              const f = current.find((c) => c.licenseId === r.licenseId && c.type === r.type)
              return f === undefined ? [] : [{
                type: "anomaly.detected" as const,
                occurredAt: now,
                licenseId: f.licenseId,
                machineId: null,
                data: { license_key: f.license.key, type: f.type, detail: f.detail, detected_at: new Date(now).toISOString() }
              }]
            })
            if (events.length > 0) yield* outbox.append(events)
            return { known: yield* repo.anomaliesSince(since), announced: events.length }
          })
        )
        const anomalies = current.map((f) => ({
          licenseKey: f.license.key,
          type: f.type,
          detail: f.detail,
          detectedAt: known.known.find((k) => k.licenseId === f.licenseId && k.type === f.type)?.detectedAt ?? now
        }))
        return { anomalies, announced: known.announced }
      })

      const anomalies = detect.pipe(Effect.map((d) => d.anomalies), Effect.withSpan("Analytics.anomalies"))
      const detectOnce = detect.pipe(Effect.map((d) => d.announced), Effect.withSpan("Analytics.detectOnce"))

      const expiring = Effect.fn("Analytics.expiring")(function*(days: number) {
        if (!(days >= 0) || !Number.isFinite(days)) return yield* invalidParam("days", "must be a number of days, 0 or more")
        const now = yield* Clock.currentTimeMillis
        const out: Array<LicenseView> = []
        for (let page = 1; out.length < maxExpiring; page++) {
          const found = yield* licenses.list({
            expiresAfter: now,
            expiresBefore: now + days * dayMillis,
            orderBy: "expires_at",
            order: "asc",
            page,
            perPage: 100
          })
          out.push(...found.items)
          if (found.items.length < 100) break
        }
        return out.slice(0, maxExpiring)
      })

      return Analytics.of({ overview, validations, anomalies, detectOnce, moveTopWindows, expiring })
    })
  )

  /**
   * Runs the anomaly rules in the background every `interval` (and once at start) for as long as the layer
   * lives, so a new anomaly is announced without anyone asking GET /analytics/anomalies; failures are logged.
   * Each round first moves the `top_licenses` windows (ageing the store's totals an hour at a time as hours pass).
   * Several processes may run it on one store: the record of announced anomalies lets one of them announce each,
   * and the store applies each move of a window once.
   */
  static readonly layerBackground = (interval: Duration.Input) =>
    Layer.effectDiscard(
      Effect.gen(function*() {
        const analytics = yield* Analytics
        const moveWindows = analytics.moveTopWindows.pipe(Effect.catchCause(logRoundFailure("moving the top licenses' windows failed")))
        yield* Effect.andThen(moveWindows, analytics.detectOnce).pipe(
          Effect.tap((n) => (n > 0 ? Effect.logInfo(`anomaly detection announced ${n} new anomaly(ies)`) : Effect.void)),
          Effect.catchCause(logRoundFailure("anomaly detection failed")),
          Effect.repeat(Schedule.spaced(interval)),
          Effect.forkScoped
        )
      })
    )
}
