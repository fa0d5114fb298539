/**
 * `BillingEvents` on the memory store (CONTRACT §20): the same provider event received many times at once is
 * applied once (every other receipt a duplicate), also when it is unmatched; an event found by
 * `lm_subscription_id` links the subscription, and later events find it by the provider's subscription id.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BillingEvents, type Model, Subscriptions } from "@lm/domain"
import { onEngine } from "./engine.js"
import { DAY, T0 } from "./fixtures.js"

const subscribe = (link: { billingProvider?: Model.BillingProvider; externalId?: string } = {}) =>
  Subscriptions.use((s) =>
    s.create({
      subscription: {
        userId: 7, productId: null, billingPeriod: "day", billingInterval: 30, amount: 3000, currency: "USD", paymentMethod: null,
        trialDays: 0, startDate: null, endDate: null, items: [], ...link
      },
      license: {}
    }))

const paid = (patch: Partial<Model.ProviderEvent> = {}): Model.ProviderEvent => ({
  provider: "stripe",
  eventId: "evt_paid",
  type: "invoice.paid",
  occurredAt: T0 + DAY,
  externalId: "sub_1",
  lmSubscriptionId: null,
  move: { _tag: "Paid", periodStart: T0 + DAY, periodEnd: T0 + 31 * DAY, amount: 3000, currency: "USD", transactionId: "in_1" },
  ...patch
})

const receive = (event: Model.ProviderEvent) => BillingEvents.use((b) => b.receive(event))

describe("BillingEvents", () => {
  it.effect("the same event received 20 times at once is applied once", () =>
    onEngine(Effect.gen(function*() {
      const { subscription } = yield* subscribe({ billingProvider: "stripe", externalId: "sub_1" })
      const outcomes = yield* Effect.all(Array.from({ length: 20 }, () => receive(paid())), { concurrency: "unbounded" })
      expect(outcomes.filter((o) => o.outcome === "applied")).toHaveLength(1)
      expect(outcomes.filter((o) => o.outcome === "duplicate")).toHaveLength(19)
      const renewals = yield* Subscriptions.use((s) => s.renewals(subscription.id, { page: 1, perPage: 50 }))
      expect(renewals.items.map((r) => r.type)).toEqual(["signup", "renewal"])
      expect((yield* BillingEvents.use((b) => b.list({ page: 1, perPage: 50, outcome: "duplicate" }))).total).toBe(19)
    })))

  it.effect("an unmatched event received twice at once is recorded once, then as a duplicate", () =>
    onEngine(Effect.gen(function*() {
      const outcomes = yield* Effect.all([receive(paid({ externalId: "sub_none" })), receive(paid({ externalId: "sub_none" }))], { concurrency: "unbounded" })
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(["duplicate", "unmatched"])
    })))

  it.effect("an event found by lm_subscription_id links the subscription; later events find it by the provider's id", () =>
    onEngine(Effect.gen(function*() {
      const { subscription } = yield* subscribe()
      const linked = yield* receive(paid({ eventId: "evt_created", move: { _tag: "Link" }, lmSubscriptionId: subscription.id, externalId: "sub_7" }))
      expect(linked).toEqual({ outcome: "applied", subscriptionId: subscription.id })
      expect((yield* Subscriptions.use((s) => s.get(subscription.id))).subscription).toMatchObject({ billingProvider: "stripe", externalId: "sub_7" })
      expect(yield* receive(paid({ externalId: "sub_7" }))).toEqual({ outcome: "applied", subscriptionId: subscription.id })
      // another provider subscription naming the same lm_subscription_id does not take it over
      expect((yield* receive(paid({ eventId: "evt_other", externalId: "sub_8", lmSubscriptionId: subscription.id }))).outcome).toBe("unmatched")
    })))
})
