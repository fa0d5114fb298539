/** What the analytics feature needs from a store: sums of the event log's hourly counters, seats, anomalies. */
import { Context } from "effect"
import type { ActivityKind } from "../activity/model.js"
import type { LicenseState } from "../licensing/model.js"
import type { Op } from "../shared/ports.js"
import type { AnalyticsPeriod, AnomalyRecord } from "./model.js"
import type { HourTotals, RollupScope } from "./rules.js"

/** A row of the anomalies announced so far. */
export type { AnomalyRecord } from "./model.js"

/**
 * What the analytics read (CONTRACT §11). The event log's `record` also adds each entry's hourly counters, as
 * `Analytics.hourlyCountsOf` computes them, in the same write (the rollups); retention prunes entries, never
 * counters. Every method only adds up, filters on the numbers it is given, and orders.
 */
export class AnalyticsRepository extends Context.Service<AnalyticsRepository, {
  /**
   * The counters of each hour in [from, to) (hours with none are left out), summed over every id of `scope`
   * or only over `scopeId`; ascending by hour.
   */
  readonly hourly: (query: {
    readonly scope: RollupScope
    readonly scopeId?: number | undefined
    readonly from: number
    readonly to: number
  }) => Op<ReadonlyArray<HourTotals>>
  /**
   * The licenses (not `noLicense`) with the most validations (valid + invalid) in the hours of the period's
   * window (the hours starting at or after its start as last set by `moveTopWindows`, every hour while it was
   * never set), most first (ties by id), at most `limit`. A store may keep these totals (summed as the event log
   * is written, aged by `moveTopWindows`) rather than add up the hourly counters on each call: the answer is the same.
   */
  readonly topLicenses: (period: AnalyticsPeriod, limit: number) => Op<ReadonlyArray<{ readonly licenseId: number; readonly validations: number }>>
  /**
   * Sets the start of each period's `topLicenses` window (an hour start, `Analytics.periodStart`): the hours
   * leaving the window are taken out of its totals, hours entering it (a window moved back) are added. Several
   * processes may call it at once: each change is applied once.
   */
  readonly moveTopWindows: (windows: ReadonlyArray<{ readonly period: AnalyticsPeriod; readonly from: number }>) => Op<void>
  /** Per license (not `noLicense`), the hours from `from` on whose `counter` (validations = valid + invalid) is at least `atLeast`. */
  readonly busyHours: (query: {
    readonly from: number
    readonly counter: "validations" | "refused"
    readonly atLeast: number
  }) => Op<ReadonlyArray<{ readonly licenseId: number; readonly hour: number; readonly count: number }>>
  /**
   * From the event log since `since`: per license (entries without one left out), how many distinct non-null
   * values of `column` its entries (of `kind` and `result` when given) hold, when at least `atLeast`.
   */
  readonly distinctPerLicense: (query: {
    readonly since: number
    readonly column: "fingerprint" | "ip_address"
    readonly kind?: ActivityKind | undefined
    readonly result?: string | undefined
    readonly atLeast: number
  }) => Op<ReadonlyArray<{ readonly licenseId: number; readonly count: number }>>
  /**
   * Over licenses in `states` with a seat limit (max_activations not null): the sum of their limits, and their
   * machines in `active` status whose seat deadline is null or after `at`.
   */
  readonly seats: (states: ReadonlyArray<LicenseState>, at: number) => Op<{ readonly activeMachines: number; readonly totalSeats: number }>
  /** Machines in `active` status whose seat deadline is null or after `at`, counted per app version (null included), most first. */
  readonly appVersions: (at: number) => Op<ReadonlyArray<{ readonly appVersion: string | null; readonly machines: number }>>
  /**
   * Records the anomalies not announced since `since` (none of the same license and type with `detectedAt` at
   * or after it) and answers those (in no set order), with the time given; the others are left as they are. Inside a
   * transaction, so that the announcement (an outbox event) commits with it and two processes never both
   * announce one.
   */
  readonly recordAnomalies: (anomalies: ReadonlyArray<AnomalyRecord>, since: number) => Op<ReadonlyArray<AnomalyRecord>>
  /** The announcement time of each (license, type) announced since `since`. */
  readonly anomaliesSince: (since: number) => Op<ReadonlyArray<AnomalyRecord>>
}>()("@lm/domain/AnalyticsRepository") {}
