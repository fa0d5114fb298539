/** The storage contract of SubscriptionRepository: subscriptions and their renewal records. */
import { assert, describe } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Effect, Ref } from "effect"
import { bareSubscriptionDraft, DAY, keyOf, licenseDraft, MINUTE, subscriptionDraft, T0 } from "./fixtures.js"
import { Boom, type ContractTest, isPositiveInt } from "./support.js"

export const subscriptionCases = (test: ContractTest): void => {
  describe("subscriptions and their renewal records", () => {
    test("insert, find and update round-trip every field, with values and with nulls; amounts up to 2^53 − 1", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const full = subscriptionDraft(license.id)
        const inserted = yield* subscriptions.insert(full, T0 + DAY)
        assert.isTrue(isPositiveInt(inserted.id))
        assert.deepStrictEqual(inserted, { ...full, id: inserted.id, revision: 1 })
        assert.deepStrictEqual(yield* subscriptions.findById(inserted.id), inserted)
        const bare = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        assert.deepStrictEqual(bare, { ...bareSubscriptionDraft(license.id), id: bare.id, revision: 1 })
        assert.isUndefined(yield* subscriptions.findById(999_999))

        const changed: Model.Subscription = {
          ...bareSubscriptionDraft(license.id, { status: "on-hold", billingPeriod: "year", billingInterval: 3, amount: 1, currency: "JPY", updatedAt: T0 + 9 }),
          id: inserted.id,
          revision: 2
        }
        assert.deepStrictEqual(yield* subscriptions.update(changed, null), changed)
        assert.deepStrictEqual(yield* subscriptions.findById(inserted.id), changed)
      }))

    test("list filters by status, user and product, oldest first, with paging and the total", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const made = yield* Effect.forEach(Array.from({ length: 5 }, (_, i) => i), (i) =>
          subscriptions.insert(subscriptionDraft(license.id, { status: i % 2 === 0 ? "active" : "trial", userId: i < 3 ? 1 : 2, productId: i === 4 ? null : 3 }), null))
        const ids = (page: Ports.Page<Model.Subscription>) => page.items.map((s) => s.id)
        const all = yield* subscriptions.list({ page: 1, perPage: 2 })
        assert.deepStrictEqual([ids(all), all.total], [[made[0]!.id, made[1]!.id], 5])
        const active = yield* subscriptions.list({ page: 1, perPage: 10, status: "active" })
        assert.deepStrictEqual(ids(active), [made[0]!.id, made[2]!.id, made[4]!.id])
        const user2 = yield* subscriptions.list({ page: 1, perPage: 10, userId: 2, productId: 3 })
        assert.deepStrictEqual([ids(user2), user2.total], [[made[3]!.id], 1])
        assert.deepStrictEqual((yield* subscriptions.list({ page: 3, perPage: 2 })).items.map((s) => s.id), [made[4]!.id])
      }))

    test("totals count subscriptions and sum their prices per status, currency, period and interval, past 2^53 exactly", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        assert.deepStrictEqual(yield* subscriptions.totals, [])
        const max = Number.MAX_SAFE_INTEGER
        const plans: Array<Partial<Model.SubscriptionDraft>> = [
          { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: max },
          { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: max },
          { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 3, amount: 5 },
          { status: "active", currency: "JPY", billingPeriod: "year", billingInterval: 1, amount: 1000 },
          { status: "trial", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: 7 }
        ]
        yield* Effect.forEach(plans, (plan) => subscriptions.insert(subscriptionDraft(license.id, plan), null))
        const key = (t: Ports.SubscriptionTotal) => `${t.status} ${t.currency} ${t.billingPeriod} ${t.billingInterval}`
        const totals = [...yield* subscriptions.totals].sort((a, b) => key(a).localeCompare(key(b)))
        assert.deepStrictEqual(totals, [
          { status: "active", currency: "JPY", billingPeriod: "year", billingInterval: 1, count: 1, amount: 1000n },
          { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, count: 2, amount: 2n * BigInt(max) },
          { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 3, count: 1, amount: 5n },
          { status: "trial", currency: "USD", billingPeriod: "month", billingInterval: 1, count: 1, amount: 7n }
        ])
      }))

    test("claimDue claims subscriptions due at or before now, earliest first, up to the limit; a cleared due time is never claimed", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const late = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 - MINUTE)
        const early = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 - DAY)
        const future = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 + 1)
        yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        const claimed = yield* store.transaction(subscriptions.claimDue(T0, 10))
        assert.deepStrictEqual(claimed.map((s) => s.id), [early.id, late.id])
        assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0, 1))).map((s) => s.id), [early.id])
        yield* subscriptions.update({ ...early, revision: 2 }, null)
        assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0 + 1, 10))).map((s) => s.id), [late.id, future.id])
      }))

    test("claimDue never hands the same subscription to two concurrent transactions (no move made twice)", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) => subscriptions.insert(bareSubscriptionDraft(license.id), T0 - i))
        const seen = yield* Ref.make<ReadonlyArray<number>>([])
        const job = store.transaction(
          Effect.gen(function*() {
            const claimed = yield* subscriptions.claimDue(T0, 5)
            yield* Effect.yieldNow
            for (const s of claimed) yield* subscriptions.update({ ...s, status: "on-hold", revision: s.revision + 1 }, null)
            yield* Ref.update(seen, (ids) => [...ids, ...claimed.map((s) => s.id)])
          })
        )
        yield* Effect.all(Array.from({ length: 8 }, () => job), { concurrency: "unbounded" })
        const ids = yield* Ref.get(seen)
        assert.strictEqual(new Set(ids).size, ids.length, "a subscription was claimed twice")
        assert.strictEqual(ids.length, 30)
        assert.deepStrictEqual(yield* store.transaction(subscriptions.claimDue(T0, 10)), [])
      }))

    test("a subscription written inside a failed transaction is rolled back", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const kept = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        yield* store.transaction(Effect.gen(function*() {
          yield* subscriptions.update({ ...kept, status: "cancelled", revision: 2 }, null)
          yield* subscriptions.insertRenewal(kept.id, { type: "renewal", amount: 1, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + DAY, proration: null, from: null, to: null, transactionId: null, createdAt: T0 })
          return yield* Effect.fail(new Boom())
        })).pipe(Effect.exit)
        assert.deepStrictEqual(yield* subscriptions.findById(kept.id), kept)
        assert.strictEqual((yield* subscriptions.listRenewals(kept.id, { page: 1, perPage: 10 })).total, 0)
      }))

    test("deleting a license deletes its subscriptions and their renewal records", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const gone = yield* licenses.insert(licenseDraft())
        const kept = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        const a = yield* subscriptions.insert(bareSubscriptionDraft(gone.id), T0)
        const b = yield* subscriptions.insert(bareSubscriptionDraft(kept.id), T0)
        yield* subscriptions.insertRenewal(a.id, { type: "signup", amount: 1, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + DAY, proration: null, from: null, to: null, transactionId: null, createdAt: T0 })
        yield* licenses.delete(gone.id)
        assert.isUndefined(yield* subscriptions.findById(a.id))
        assert.strictEqual((yield* subscriptions.listRenewals(a.id, { page: 1, perPage: 10 })).total, 0)
        assert.deepStrictEqual(yield* subscriptions.findById(b.id), b)
        const store = yield* Ports.Store
        assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0, 10))).map((s) => s.id), [b.id])
      }))

    test("renewal records round-trip every field, listed oldest first per subscription", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const subscriptions = yield* Ports.SubscriptionRepository
        const license = yield* licenses.insert(licenseDraft())
        const a = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        const b = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
        const plan = { amount: 3000, billingPeriod: "month" as const, billingInterval: 1, productId: null }
        const signup: Model.RenewalDraft = { type: "signup", amount: 3000, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + 31 * DAY, proration: null, from: null, to: plan, transactionId: null, createdAt: T0 }
        const switched: Model.RenewalDraft = {
          type: "switch",
          amount: -1000,
          currency: "USD",
          status: "paid",
          periodStart: T0,
          periodEnd: T0 + 31 * DAY,
          proration: { credit: 2000, charge: 1000, net: -1000 },
          from: plan,
          to: { amount: 1500, billingPeriod: "year", billingInterval: 2, productId: 4 },
          transactionId: "tx-9",
          createdAt: T0 + DAY
        }
        const first = yield* subscriptions.insertRenewal(a.id, signup)
        yield* subscriptions.insertRenewal(b.id, signup)
        const second = yield* subscriptions.insertRenewal(a.id, switched)
        assert.deepStrictEqual(first, { ...signup, id: first.id, subscriptionId: a.id })
        assert.deepStrictEqual(second, { ...switched, id: second.id, subscriptionId: a.id })
        const listed = yield* subscriptions.listRenewals(a.id, { page: 1, perPage: 10 })
        assert.deepStrictEqual(listed, { items: [first, second], total: 2 })
        assert.deepStrictEqual((yield* subscriptions.listRenewals(a.id, { page: 2, perPage: 1 })).items, [second])
      }))
  })
}
