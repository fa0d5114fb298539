/**
 * The billing calendar and proration (CONTRACT §10): month arithmetic keeps the anchor day over any number of
 * periods, and proration conserves money exactly over any sequence of switches.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { DAY, SECOND } from "./fixtures.js"
import { Billing, Model, Services } from "@lm/domain"

const iso = (ms: number) => new Date(ms).toISOString()

describe("billing calendar", () => {
  it("keeps the anchor day: Jan 31 → Feb 28 (29 in a leap year) → Mar 31, in UTC", () => {
    const jan31 = Date.UTC(2027, 0, 31, 9, 30)
    const day = Billing.anchorDayOf(jan31)
    const feb = Billing.addPeriods(jan31, "month", 1, 1, day)
    const mar = Billing.addPeriods(feb, "month", 1, 1, day)
    expect([iso(feb), iso(mar)]).toEqual(["2027-02-28T09:30:00.000Z", "2027-03-31T09:30:00.000Z"])
    const leap = Billing.addPeriods(Date.UTC(2028, 0, 31), "month", 1, 1, 31)
    expect(iso(leap)).toBe("2028-02-29T00:00:00.000Z")
    expect(iso(Billing.addPeriods(Date.UTC(2028, 1, 29), "year", 1, 1, 29))).toBe("2029-02-28T00:00:00.000Z")
    expect(iso(Billing.addPeriods(Date.UTC(2029, 1, 28), "year", 3, 1, 29))).toBe("2032-02-29T00:00:00.000Z")
    expect(iso(Billing.addPeriods(Date.UTC(2026, 10, 30), "month", 3, 1, 30))).toBe("2027-02-28T00:00:00.000Z")
  })

  it("days and weeks are whole multiples of 24 hours", () => {
    const t = Date.UTC(2026, 2, 28, 23)
    expect(Billing.addPeriods(t, "day", 3, 1, 28) - t).toBe(3 * DAY)
    expect(Billing.addPeriods(t, "week", 2, 1, 28) - t).toBe(14 * DAY)
  })

  it("property: stepping one period at a time lands where counting from the anchor does, on the anchor day", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2090, 0, 1) }),
        fc.constantFrom<Model.BillingPeriod>("month", "year"),
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 1, max: 60 }),
        (anchor, period, interval, periods) => {
          const day = Billing.anchorDayOf(anchor)
          let at = anchor
          for (let k = 1; k <= periods; k++) {
            at = Billing.addPeriods(at, period, interval, 1, day)
            expect(at).toBe(Billing.addPeriods(anchor, period, interval, k, day))
            const date = new Date(at)
            const monthLength = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate()
            expect(date.getUTCDate()).toBe(Math.min(day, monthLength))
            expect(at % DAY).toBe(anchor % DAY)
          }
        }
      )
    )
  })
})

describe("proration", () => {
  const start = Date.UTC(2026, 0, 1)
  const end = Date.UTC(2026, 0, 31)

  it("credits the unused part of the old amount and charges the same part of the new, on seconds", () => {
    // 10 of 30 days left: credit 10/30 of 30.00, charge 10/30 of 60.00
    expect(Billing.prorate(3000, 6000, start, end, end - 10 * DAY, false)).toEqual({ credit: 1000, charge: 2000, net: 1000 })
    // a downgrade is a credit
    expect(Billing.prorate(6000, 3000, start, end, end - 10 * DAY, false)).toEqual({ credit: 2000, charge: 1000, net: -1000 })
    // one second left of a 30-day period: the fraction is on seconds, not days (a day count would say 0 or 1)
    expect(Billing.prorate(2_592_000_00, 0, start, end, end - SECOND, false)).toEqual({ credit: 100, charge: 0, net: -100 })
    // a new period length: the whole new amount, minus the credit
    expect(Billing.prorate(3000, 10000, start, end, end - 15 * DAY, true)).toEqual({ credit: 1500, charge: 10000, net: 8500 })
  })

  it("rounds each share half to even", () => {
    // 1 unit × 1/2 = 0.5 → 0; 3 × 1/2 = 1.5 → 2
    const twoSeconds = start + 2 * SECOND
    expect(Billing.prorate(1, 3, start, twoSeconds, start + SECOND, false)).toEqual({ credit: 0, charge: 2, net: 2 })
  })

  it("property: over any sequence of switches, no minor unit is lost: each net = charge − credit, the sums agree, shares are bounded", () => {
    const switchArb = fc.record({ amount: fc.integer({ min: 0, max: 10_000_000_00 }), at: fc.integer({ min: 0, max: 30 * 86_400 }), newPeriod: fc.boolean() })
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000_00 }), fc.array(switchArb, { maxLength: 30 }), (first, switches) => {
        let amount = first
        let credits = 0
        let charges = 0
        let nets = 0
        for (const { amount: next, at, newPeriod } of switches) {
          const p = Billing.prorate(amount, next, start, end, start + at * SECOND, newPeriod)
          expect(Number.isSafeInteger(p.credit) && Number.isSafeInteger(p.charge)).toBe(true)
          expect(p.net).toBe(p.charge - p.credit)
          expect(p.credit).toBeGreaterThanOrEqual(0)
          expect(p.credit).toBeLessThanOrEqual(amount)
          expect(p.charge).toBeLessThanOrEqual(next)
          credits += p.credit
          charges += p.charge
          nets += p.net
          amount = next
        }
        expect(nets).toBe(charges - credits)
      })
    )
  })
})

describe("monthly recurring revenue", () => {
  const total = (currency: string, billingPeriod: Model.BillingPeriod, billingInterval: number, amount: bigint) => ({
    currency,
    billingPeriod,
    billingInterval,
    amount
  })
  const mrr = (...totals: Array<Billing.PlanTotal>) => Billing.monthlyRecurring(totals).map((m) => [m.currency, m.minor])

  it("normalises each period to a month exactly: a year /12, a week ×52/12, a day ×365/12, over the interval", () => {
    expect(mrr(total("USD", "year", 1, 12_000n))).toEqual([["USD", 1_000n]])
    expect(mrr(total("USD", "month", 1, 1_999n))).toEqual([["USD", 1_999n]])
    expect(mrr(total("USD", "month", 3, 3_000n))).toEqual([["USD", 1_000n]])
    expect(mrr(total("USD", "week", 1, 1_200n))).toEqual([["USD", 5_200n]])
    expect(mrr(total("USD", "week", 2, 1_200n))).toEqual([["USD", 2_600n]])
    expect(mrr(total("USD", "day", 1, 12n))).toEqual([["USD", 365n]])
    expect(mrr(total("USD", "day", 365, 1_200n))).toEqual([["USD", 100n]])
    expect(mrr(total("USD", "year", 2, 2_400n))).toEqual([["USD", 100n]])
  })

  it("rounds half to even once per currency, after summing exactly", () => {
    expect(mrr(total("USD", "month", 2, 1n))).toEqual([["USD", 0n]]) // 0.5 → 0
    expect(mrr(total("USD", "month", 2, 3n))).toEqual([["USD", 2n]]) // 1.5 → 2
    expect(mrr(total("USD", "year", 1, 1_000n))).toEqual([["USD", 83n]]) // 83.33…
    // Two plans of 83.33… each make 166.67…: 167, not 83 + 83.
    expect(mrr(total("USD", "year", 1, 1_000n), total("USD", "year", 2, 2_000n))).toEqual([["USD", 167n]])
    // A third of a cent per day and two thirds per week do not vanish on their own: 365/36 + 104/36 = 13.03 → 13.
    expect(mrr(total("USD", "day", 3, 1n), total("USD", "week", 3, 2n))).toEqual([["USD", 13n]])
  })

  it("keeps currencies apart, sorted, and sums past 2^53 without loss", () => {
    const big = 2n ** 60n
    expect(mrr(total("USD", "month", 1, 1n), total("EUR", "month", 1, 2n), total("USD", "month", 1, big))).toEqual([["EUR", 2n], ["USD", big + 1n]])
    expect(mrr()).toEqual([])
  })

  it("the overview's figures: every status counted, MRR over active and pending-cancel, in each currency's decimals", () => {
    const group = (status: Model.SubscriptionStatus, currency: string, billingPeriod: Model.BillingPeriod, amount: bigint, count = 1) => ({
      status,
      currency,
      billingPeriod,
      billingInterval: 1,
      count,
      amount
    })
    const figures = Services.subscriptionFiguresOf([
      group("active", "USD", "month", 4_000n, 2),
      group("pending-cancel", "USD", "year", 12_000n),
      group("trial", "USD", "month", 99_999n),
      group("on-hold", "USD", "month", 99_999n),
      group("cancelled", "USD", "month", 99_999n),
      group("active", "JPY", "year", 1_000n), // 83.33 yen → 83
      group("active", "KWD", "year", 18n), // 1.5 fils → 2: 0.002 KWD
      group("pending-cancel", "KWD", "week", 3_000n) // 13 fils: 13.000 → total 13.002 KWD
    ])
    expect(figures.byStatus).toEqual({ pending: 0, trial: 1, active: 4, "on-hold": 1, "pending-cancel": 2, cancelled: 1, expired: 0 })
    expect(figures.mrr).toEqual([
      { currency: "JPY", amount: "83" },
      { currency: "KWD", amount: "13.002" },
      { currency: "USD", amount: "50.00" }
    ])
    expect(Services.subscriptionFiguresOf([])).toEqual({
      byStatus: { pending: 0, trial: 0, active: 0, "on-hold": 0, "pending-cancel": 0, cancelled: 0, expired: 0 },
      mrr: []
    })
  })
})
