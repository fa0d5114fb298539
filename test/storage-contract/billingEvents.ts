/**
 * The storage contract of billing (CONTRACT §20): a subscription's provider link (found by the provider's
 * subscription id, unique per provider) and `BillingEventRepository` (a provider's event id claimed once, later
 * receipts recorded as duplicates beside it, the newest applied timestamp per subscription, the list newest first).
 */
import { assert, describe } from "@effect/vitest"
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { bareSubscriptionDraft, DAY, licenseDraft, T0 } from "./fixtures.js"
import type { ContractTest } from "./support.js"

const event = (overrides: Partial<Model.BillingEventDraft> = {}): Model.BillingEventDraft => ({
  provider: "stripe",
  eventId: "evt_1",
  type: "invoice.paid",
  externalId: "sub_A",
  subscriptionId: null,
  outcome: "applied",
  occurredAt: T0,
  receivedAt: T0 + 5,
  ...overrides
})

export const billingCases = (test: ContractTest): void => {
  describe("billing: provider links and received events", () => {
    test("a subscription is found by its provider's subscription id, which is unique per provider", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const stripe = yield* subscriptions.insert(bareSubscriptionDraft(license.id, { billingProvider: "stripe", externalId: "sub_A" }), null)
        const paddle = yield* subscriptions.insert(bareSubscriptionDraft(license.id, { billingProvider: "paddle", externalId: "sub_A" }), null)
        const none = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        assert.deepStrictEqual(yield* subscriptions.findByExternalId("stripe", "sub_A"), stripe)
        assert.deepStrictEqual(yield* subscriptions.findByExternalId("paddle", "sub_A"), paddle)
        assert.isUndefined(yield* subscriptions.findByExternalId("lemonsqueezy", "sub_A"))
        assert.isUndefined(yield* subscriptions.findByExternalId("stripe", "sub_B"))

        const taken = yield* Effect.flip(subscriptions.insert(bareSubscriptionDraft(license.id, { billingProvider: "stripe", externalId: "sub_A" }), null))
        assert.strictEqual(taken._tag, "SubscriptionExists")
        const takenByUpdate = yield* Effect.flip(subscriptions.update({ ...none, billingProvider: "stripe", externalId: "sub_A", revision: 2 }, null))
        assert.strictEqual(takenByUpdate._tag, "SubscriptionExists")
        assert.deepStrictEqual(yield* subscriptions.findById(none.id), none)

        const linked = yield* subscriptions.update({ ...none, billingProvider: "stripe", externalId: "sub_B", revision: 2 }, null)
        assert.deepStrictEqual(yield* subscriptions.findByExternalId("stripe", "sub_B"), linked)
      }))

    test("the first receipt of an event id claims it; later ones are recorded as duplicates beside it", () =>
      Effect.gen(function*() {
        const events = yield* Ports.BillingEventRepository
        const first = yield* events.record(event())
        assert.deepStrictEqual(first, { ...event(), id: first!.id })
        assert.isUndefined(yield* events.record(event({ outcome: "stale" })), "the id is claimed")
        // another provider's event of the same id is another event
        assert.isDefined(yield* events.record(event({ provider: "paddle" })))
        const duplicate = yield* events.record(event({ outcome: "duplicate", receivedAt: T0 + 9 }))
        const again = yield* events.record(event({ outcome: "duplicate", receivedAt: T0 + 10 }))
        assert.isDefined(duplicate)
        assert.isDefined(again)
        const listed = yield* events.list({ page: 1, perPage: 10, provider: "stripe" })
        assert.deepStrictEqual(listed.items.map((e) => e.outcome), ["duplicate", "duplicate", "applied"])
        assert.strictEqual(listed.total, 3)
      }))

    test("a claim inside a transaction that rolls back is released", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const events = yield* Ports.BillingEventRepository
        const rolledBack = yield* Effect.flip(store.transaction(Effect.andThen(events.record(event()), Effect.fail("undo" as const))))
        assert.strictEqual(rolledBack, "undo")
        assert.isDefined(yield* events.record(event()))
      }))

    test("the newest applied provider timestamp of a subscription counts applied events only", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const events = yield* Ports.BillingEventRepository
        const license = yield* licenses.insert(licenseDraft())
        const a = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        const b = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        assert.isNull(yield* events.lastAppliedAt(a.id))
        yield* events.record(event({ eventId: "e1", subscriptionId: a.id, occurredAt: T0 + DAY }))
        yield* events.record(event({ eventId: "e2", subscriptionId: a.id, occurredAt: T0 }))
        yield* events.record(event({ eventId: "e3", subscriptionId: a.id, occurredAt: T0 + 5 * DAY, outcome: "ignored" }))
        yield* events.record(event({ eventId: "e4", subscriptionId: b.id, occurredAt: T0 + 9 * DAY }))
        assert.strictEqual(yield* events.lastAppliedAt(a.id), T0 + DAY)
        assert.strictEqual(yield* events.lastAppliedAt(b.id), T0 + 9 * DAY)
      }))

    test("list is newest first, filtered by outcome and provider, with paging and the total", () =>
      Effect.gen(function*() {
        const events = yield* Ports.BillingEventRepository
        const outcomes: ReadonlyArray<Model.BillingEventOutcome> = ["applied", "unmatched", "ignored", "unmatched", "stale"]
        const made = yield* Effect.forEach(outcomes, (outcome, i) =>
          events.record(event({ eventId: `evt_${i}`, outcome, provider: i === 4 ? "lemonsqueezy" : "stripe", externalId: i === 1 ? null : "sub_A" })))
        const ids = (page: Ports.Page<Model.BillingEvent>) => page.items.map((e) => e.id)
        const all = yield* events.list({ page: 1, perPage: 2 })
        assert.deepStrictEqual([ids(all), all.total], [[made[4]!.id, made[3]!.id], 5])
        const unmatched = yield* events.list({ page: 1, perPage: 10, outcome: "unmatched" })
        assert.deepStrictEqual([ids(unmatched), unmatched.total], [[made[3]!.id, made[1]!.id], 2])
        assert.deepStrictEqual(unmatched.items[1], { ...event({ eventId: "evt_1", outcome: "unmatched", externalId: null }), id: made[1]!.id })
        const lemon = yield* events.list({ page: 1, perPage: 10, provider: "lemonsqueezy", outcome: "stale" })
        assert.deepStrictEqual(ids(lemon), [made[4]!.id])
        assert.deepStrictEqual(ids(yield* events.list({ page: 3, perPage: 2 })), [made[0]!.id])
      }))
  })
}
