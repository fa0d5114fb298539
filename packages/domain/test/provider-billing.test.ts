/**
 * What a billing provider's event does to its subscription (CONTRACT §20), as the pure rules decide it: an older
 * event than the last applied is stale; a move the state machine refuses, or an event type that moves nothing, is
 * ignored; a paid period takes the provider's bounds (or one period of the calendar when it names none); a plan
 * change takes the provider's amount with no proration, and the same plan again undoes a pending cancel; a
 * provider-driven subscription is moved by the clock only for the grace rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Model, ProviderBilling, Subscription } from "@lm/domain"
import { DAY, successOf } from "./fixtures.js"

const JAN1 = Date.UTC(2027, 0, 1)

const subscription = (patch: Partial<Model.Subscription> = {}): Model.Subscription => {
  const { draft } = successOf(Subscription.signup({
    userId: 7, productId: null, billingPeriod: "day", billingInterval: 30, amount: 3000, currency: "USD", paymentMethod: null,
    trialDays: 0, startDate: null, endDate: null, items: [], billingProvider: "stripe", externalId: "sub_1"
  }, JAN1))
  return { ...draft, id: 1, licenseId: 10, revision: 1, ...patch }
}

const event = (move: Model.BillingMove | null, occurredAt = JAN1 + DAY, patch: Partial<Model.ProviderEvent> = {}): Model.ProviderEvent => ({
  provider: "stripe", eventId: "evt_1", type: "x", occurredAt, externalId: "sub_1", lmSubscriptionId: null, move, ...patch
})

const applied = (decision: ProviderBilling.Decision) => {
  expect(decision.outcome).toBe("applied")
  return decision.outcome === "applied" ? decision.change : null
}

describe("provider events", () => {
  it("an event older than the newest applied one is stale; the same time is not", () => {
    const s = subscription()
    expect(ProviderBilling.decide(s, event({ _tag: "Pause" }, JAN1), JAN1 + 1, JAN1 + 2 * DAY).outcome).toBe("stale")
    expect(ProviderBilling.decide(s, event({ _tag: "Pause" }, JAN1 + 1), JAN1 + 1, JAN1 + 2 * DAY).outcome).toBe("applied")
  })

  it("a move the state machine refuses, a type that moves nothing, or another currency is ignored", () => {
    const now = JAN1 + 2 * DAY
    expect(ProviderBilling.decide(subscription({ status: "cancelled" }), event({ _tag: "Resume" }), null, now).outcome).toBe("ignored")
    expect(ProviderBilling.decide(subscription(), event(null), null, now).outcome).toBe("ignored")
    const paidInEuros: Model.BillingMove = { _tag: "Paid", periodStart: JAN1, periodEnd: JAN1 + 30 * DAY, amount: 3000, currency: "EUR", transactionId: null }
    expect(ProviderBilling.decide(subscription(), event(paidInEuros), null, now).outcome).toBe("ignored")
  })

  it("a paid period takes the provider's bounds, or one period of the calendar when it names none", () => {
    const now = JAN1 + 40 * DAY
    const s = subscription({ status: "on-hold" })
    const paid = applied(ProviderBilling.decide(s, event({ _tag: "Paid", periodStart: JAN1 + 31 * DAY, periodEnd: JAN1 + 62 * DAY, amount: 2500, currency: "USD", transactionId: "in_1" }), null, now))!
    expect(paid.subscription).toMatchObject({ status: "active", currentPeriodStart: JAN1 + 31 * DAY, currentPeriodEnd: JAN1 + 62 * DAY, nextPaymentAt: JAN1 + 62 * DAY })
    expect(paid.renewal).toMatchObject({ type: "renewal", status: "paid", amount: 2500, transactionId: "in_1" })
    const calendar = applied(ProviderBilling.decide(s, event({ _tag: "Paid", periodStart: JAN1 + 35 * DAY, periodEnd: null, amount: null, currency: null, transactionId: null }), null, now))!
    expect([calendar.subscription.currentPeriodEnd, calendar.renewal?.amount]).toEqual([JAN1 + 65 * DAY, 3000])
  })

  it("a plan change takes the provider's amount unprorated; the same plan undoes a pending cancel or changes nothing", () => {
    const now = JAN1 + 10 * DAY
    const changed = applied(ProviderBilling.decide(subscription(), event({ _tag: "Switch", amount: 4500, currency: "USD", billingPeriod: "month", billingInterval: 1 }), null, now))!
    expect(changed.subscription).toMatchObject({ amount: 4500, billingPeriod: "month", billingInterval: 1, currentPeriodEnd: JAN1 + 30 * DAY })
    expect(changed.renewal).toMatchObject({ type: "switch", proration: null, from: { amount: 3000 }, to: { amount: 4500 } })
    const undone = applied(ProviderBilling.decide(subscription({ status: "pending-cancel", cancelAtPeriodEnd: true }), event({ _tag: "Switch", amount: 3000, currency: null }), null, now))!
    expect(undone.subscription).toMatchObject({ status: "active", cancelAtPeriodEnd: false })
    expect(applied(ProviderBilling.decide(subscription(), event({ _tag: "Switch", amount: null, currency: null }), null, now))).toBeNull()
  })

  it("an event found by lm_subscription_id links the subscription to the provider's", () => {
    const s = subscription({ billingProvider: null, externalId: null })
    const linked = applied(ProviderBilling.decide(s, event({ _tag: "Link" }, JAN1, { externalId: "sub_9" }), null, JAN1))!
    expect([linked.subscription.billingProvider, linked.subscription.externalId]).toEqual(["stripe", "sub_9"])
    expect(ProviderBilling.linkable(subscription({ externalId: "sub_other" }), event(null, JAN1, { externalId: "sub_9" }))).toBe(false)
  })

  it("the clock moves a provider-driven subscription only by the grace rule", () => {
    const s = subscription({ status: "pending-cancel", cancelAtPeriodEnd: true, endDate: JAN1 + DAY })
    expect(Subscription.dueMove(s, JAN1 + 400 * DAY, 3)).toBeNull()
    expect(Subscription.nextDueAt(s, 3)).toBeNull()
    const active = subscription()
    expect(Subscription.dueMove(active, JAN1 + 33 * DAY, 3)).toEqual({ action: "payment_failed", dueAt: JAN1 + 33 * DAY })
    expect(Subscription.dueMove(active, JAN1 + 33 * DAY - 1, 3)).toBeNull()
  })
})
