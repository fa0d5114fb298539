/**
 * The billing calendar and proration of CONTRACT §10, in UTC. A period is `billing_interval` days, weeks,
 * months or years; month arithmetic keeps the anchor day (Jan 31 + 1 month = Feb 28 or 29, then Mar 31), so
 * each boundary is computed from the anchor's day, never by adding to a clamped date.
 */
import { divideHalfEven, share } from "../shared/money.js"
import type { BillingPeriod, Proration } from "./model.js"

const DAY_MS = 86_400_000

/** `billing_interval`: 1 to 365 units. */
export const maxBillingInterval = 365

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate()

/** `from` plus `months` calendar months, on `anchorDay` (1–31) or the month's last day when it is shorter. */
export const addMonths = (from: number, months: number, anchorDay: number): number => {
  const date = new Date(from)
  const index = date.getUTCFullYear() * 12 + date.getUTCMonth() + months
  const year = Math.floor(index / 12)
  const month = index - year * 12
  const day = Math.min(anchorDay, daysInMonth(year, month))
  return Date.UTC(year, month, day, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds(), date.getUTCMilliseconds())
}

/**
 * `from` plus `count` periods of `interval` units. `anchorDay` is the day of the month the calendar keeps
 * (the anchor's, which a clamped `from` such as Feb 28 may have lost); days and weeks are exact multiples of
 * 24 hours (UTC has no daylight saving).
 */
export const addPeriods = (from: number, period: BillingPeriod, interval: number, count: number, anchorDay: number): number => {
  switch (period) {
    case "day":
      return from + count * interval * DAY_MS
    case "week":
      return from + count * interval * 7 * DAY_MS
    case "month":
      return addMonths(from, count * interval, anchorDay)
    case "year":
      return addMonths(from, count * interval * 12, anchorDay)
  }
}

/** The day of the month (UTC) of an anchor moment, the day month arithmetic keeps. */
export const anchorDayOf = (anchor: number): number => new Date(anchor).getUTCDate()

/** The seconds of a period that remain at `now` (0 after its end, all of it before its start), and its length. */
export const unusedSeconds = (periodStart: number, periodEnd: number, now: number): { unused: number; total: number } => {
  const total = Math.max(1, Math.floor((periodEnd - periodStart) / 1000))
  const left = Math.floor((periodEnd - Math.max(now, periodStart)) / 1000)
  return { unused: Math.min(total, Math.max(0, left)), total }
}

/**
 * Proration of a switch at `now` (CONTRACT §10), on whole seconds: credit = old amount × unused fraction of the
 * period, charge = new amount × the same fraction (or the whole new amount when a new period length starts a
 * new period now), `net = charge − credit`. Each product is rounded half to even once, so net is exact.
 */
export const prorate = (
  oldAmount: number,
  newAmount: number,
  periodStart: number,
  periodEnd: number,
  now: number,
  newPeriod: boolean
): Proration => {
  const { unused, total } = unusedSeconds(periodStart, periodEnd, now)
  const credit = share(oldAmount, unused, total)
  const charge = newPeriod ? newAmount : share(newAmount, unused, total)
  return { credit, charge, net: charge - credit }
}

// ---- monthly recurring revenue ----------------------------------------------------------------------------

/**
 * How many units of a billing period one month holds, as an exact fraction (a month is a twelfth of a year of
 * 365 days or 52 weeks): a day 365/12, a week 52/12, a month 1, a year 1/12. So the monthly share of a price
 * per `interval` units is `price × numerator / (denominator × interval)`.
 */
export const periodsPerMonth: Readonly<Record<BillingPeriod, { readonly numerator: bigint; readonly denominator: bigint }>> = {
  day: { numerator: 365n, denominator: 12n },
  week: { numerator: 52n, denominator: 12n },
  month: { numerator: 1n, denominator: 1n },
  year: { numerator: 1n, denominator: 12n }
}

/** Subscription statuses whose price counts toward MRR: paying now (`pending-cancel` pays until its period ends). */
export const mrrStatuses: ReadonlySet<string> = new Set(["active", "pending-cancel"])

/** Prices of one plan shape summed by the store: `amount` is the sum of the prices (minor units) of its subscriptions. */
export interface PlanTotal {
  readonly currency: string
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly amount: bigint
}

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b))

/**
 * Monthly recurring revenue per currency, in minor units: each plan total normalised to one month exactly (a
 * fraction of bigints), summed per currency, and rounded half to even once at the end. Currencies sorted.
 */
export const monthlyRecurring = (totals: ReadonlyArray<PlanTotal>): ReadonlyArray<{ readonly currency: string; readonly minor: bigint }> => {
  const sums = new Map<string, { n: bigint; d: bigint }>()
  for (const t of totals) {
    const per = periodsPerMonth[t.billingPeriod]
    const n = t.amount * per.numerator
    const d = per.denominator * BigInt(t.billingInterval)
    const held = sums.get(t.currency) ?? { n: 0n, d: 1n }
    const sumN = held.n * d + n * held.d
    const sumD = held.d * d
    const common = gcd(sumN < 0n ? -sumN : sumN, sumD) || 1n
    sums.set(t.currency, { n: sumN / common, d: sumD / common })
  }
  return [...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([currency, { d, n }]) => ({ currency, minor: divideHalfEven(n, d) }))
}
