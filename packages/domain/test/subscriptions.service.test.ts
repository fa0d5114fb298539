/**
 * Subscriptions through the service on the memory store (CONTRACT §10): the bound license follows in the same
 * transaction (validation sees it at once), an administrator's suspension is never lifted by the subscription,
 * renewal history, and the period-end job under the TestClock (grace days, pending-cancel, end date, catching
 * up after downtime).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Licenses, Licensing, Ports, Services, Subscriptions } from "@lm/domain"
import { onEngine } from "./engine.js"
import { DAY, T0 } from "./fixtures.js"

const plan = {
  userId: 7,
  productId: null,
  billingPeriod: "month" as const,
  billingInterval: 1,
  amount: 3000,
  currency: "USD",
  paymentMethod: null,
  trialDays: 0,
  startDate: null,
  endDate: null,
  items: []
}

const subscribe = (patch: Partial<Services.CreateSubscriptionInput["subscription"]> = {}, license: Partial<Services.CreateSubscriptionInput> = {}) =>
  Subscriptions.use((s) => s.create({ subscription: { ...plan, ...patch }, license: { maxActivations: 2 }, ...license }))
const validate = (licenseKey: string) => Licensing.use((l) => l.validate({ licenseKey, ipAddress: null })).pipe(Effect.map((r) => r.validation))
const runDue = Subscriptions.use((s) => s.runDue)
const eventTypes = Ports.EventOutbox.use((o) => o.readAfter(0, 1000)).pipe(Effect.map((events) => events.map((e) => e.type)))

describe("the bound license follows", () => {
  it.effect("a new subscription creates its license, expiring at the period end and bound to it", () =>
    onEngine(Effect.gen(function*() {
      const { subscription, license } = yield* subscribe()
      expect(subscription.status).toBe("active")
      expect(license.license).toMatchObject({ subscriptionId: subscription.id, expiresAt: subscription.currentPeriodEnd, userId: 7, maxActivations: 2 })
      expect((yield* validate(license.license.key)).valid).toBe(true)
      expect(yield* eventTypes).toEqual(["license.created", "subscription.created", "license.renewed"])
    })))

  it.effect("pause suspends the license (validation refused at once), resume reinstates it", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription, license } = yield* subscribe()
      const key = license.license.key
      expect((yield* validate(key)).valid).toBe(true) // now cached
      const paused = yield* subs.pause(subscription.id)
      expect([paused.subscription.status, paused.license.status]).toEqual(["on-hold", "suspended"])
      expect((yield* validate(key)).code).toBe("license_suspended")
      const resumed = yield* subs.resume(subscription.id)
      expect([resumed.subscription.status, resumed.license.status]).toEqual(["active", "inactive"])
      expect((yield* validate(key)).valid).toBe(true)
      const error = yield* Effect.flip(subs.resume(subscription.id))
      expect(error).toMatchObject({ _tag: "InvalidTransition", from: "active", action: "resume", status: 409 })
    })))

  it.effect("an administrator's suspension is never lifted by the subscription", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription, license } = yield* subscribe()
      yield* Licenses.use((l) => l.suspend(license.license.key))
      yield* subs.pause(subscription.id)
      const resumed = yield* subs.resume(subscription.id)
      expect(resumed.license.status).toBe("suspended")
    })))

  it.effect("cancel now ends the license at once, its grace days not applying", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription, license } = yield* subscribe({}, { license: { graceDays: 30 } })
      yield* subs.cancel(subscription.id, false)
      yield* TestClock.adjust(1)
      expect((yield* validate(license.license.key)).code).toBe("license_expired")
    })))

  it.effect("binds an existing license by key; a license already bound to a live subscription is refused", () =>
    onEngine(Effect.gen(function*() {
      const made = yield* Licenses.use((l) => l.create({}))
      const { subscription } = yield* Subscriptions.use((s) => s.create({ subscription: plan, licenseKey: made.license.key }))
      expect(subscription.licenseId).toBe(made.license.id)
      const again = yield* Effect.flip(Subscriptions.use((s) => s.create({ subscription: plan, licenseKey: made.license.key })))
      expect(again).toMatchObject({ _tag: "InvalidParam", params: { license_key: expect.any(String) } })
    })))

  it.effect("switch prorates, records the renewal and may lower the seat limit", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription } = yield* subscribe({ startDate: Date.UTC(2026, 0, 1) })
      yield* TestClock.adjust(21 * DAY) // 10 of 31 days left
      const switched = yield* subs.switchPlan(subscription.id, { amount: 6200, maxActivations: 1 })
      expect(switched.license.license.maxActivations).toBe(1)
      const renewals = yield* subs.renewals(subscription.id, { page: 1, perPage: 10 })
      expect(renewals.items.map((r) => r.type)).toEqual(["signup", "switch"])
      expect(renewals.items[1]!.proration).toEqual({ credit: 968, charge: 2000, net: 1032 })
    })))
})

describe("payments go through the PaymentGateway", () => {
  it.effect("the bundled default records the reported payment with its transaction id", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription } = yield* subscribe()
      yield* subs.renew(subscription.id, "tx-7")
      const last = (yield* subs.renewals(subscription.id, { page: 1, perPage: 10 })).items.at(-1)!
      expect([last.status, last.transactionId]).toEqual(["paid", "tx-7"])
    })))

  it.effect("a declined payment records a failed renewal and leaves the period as it was", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription } = yield* subscribe()
      const after = yield* subs.renew(subscription.id, null).pipe(
        Effect.provideService(Ports.PaymentGateway, { collect: () => Effect.succeed({ status: "failed" as const, transactionId: "declined-1" }) })
      )
      expect(after.subscription.currentPeriodEnd).toBe(subscription.currentPeriodEnd)
      const last = (yield* subs.renewals(subscription.id, { page: 1, perPage: 10 })).items.at(-1)!
      expect([last.status, last.transactionId]).toEqual(["failed", "declined-1"])
      expect((yield* eventTypes).at(-1)).toBe("subscription.payment_failed")
    })))
})

describe("the period-end job", () => {
  it.effect("an unpaid period goes on-hold after the grace days (3 by default); a payment reactivates it", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription, license } = yield* subscribe()
      const due = subscription.currentPeriodEnd + 3 * DAY
      yield* TestClock.setTime(due - 1)
      expect(yield* runDue).toBe(0)
      yield* TestClock.setTime(due)
      expect(yield* runDue).toBe(1)
      const held = yield* subs.get(subscription.id)
      expect([held.subscription.status, held.license.status]).toEqual(["on-hold", "suspended"])
      const paid = yield* subs.renew(subscription.id, "tx-1")
      expect(paid.subscription.status).toBe("active")
      expect(paid.license.status).not.toBe("suspended")
      const renewals = (yield* subs.renewals(subscription.id, { page: 1, perPage: 10 })).items
      expect(renewals.map((r) => [r.type, r.status, r.transactionId])).toEqual([["signup", "paid", null], ["renewal", "failed", null], ["renewal", "paid", "tx-1"]])
    })))

  it.effect("the grace days are a setting (LM_PAYMENT_GRACE_DAYS); a longer one also holds for subscriptions written before", () =>
    onEngine(Effect.gen(function*() {
      const { subscription } = yield* subscribe()
      yield* TestClock.setTime(subscription.currentPeriodEnd + DAY)
      expect(yield* runDue).toBe(1)
      const later = yield* subscribe()
      yield* TestClock.setTime(later.subscription.currentPeriodEnd + 3 * DAY)
      const longer = Effect.provideService(Services.SubscriptionSettings, { paymentGraceDays: 5 })
      expect(yield* runDue.pipe(longer)).toBe(0)
      yield* TestClock.setTime(later.subscription.currentPeriodEnd + 5 * DAY)
      expect(yield* runDue.pipe(longer)).toBe(1)
    }).pipe(Effect.provideService(Services.SubscriptionSettings, { paymentGraceDays: 1 }))))

  it.effect("pending-cancel becomes cancelled at the period end, and the license ends", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const { subscription, license } = yield* subscribe()
      yield* subs.cancel(subscription.id, true)
      yield* TestClock.setTime(subscription.currentPeriodEnd)
      expect(yield* runDue).toBe(1)
      expect((yield* subs.get(subscription.id)).subscription).toMatchObject({ status: "cancelled", cancelledAt: subscription.currentPeriodEnd })
      yield* TestClock.adjust(1)
      expect((yield* validate(license.license.key)).code).toBe("license_expired")
    })))

  it.effect("while requests arrive, the job rests between batches (nine times a batch's time) and still makes every move", () =>
    onEngine(Effect.gen(function*() {
      // One more than a batch (200), all ending at once.
      yield* Effect.forEach(Array.from({ length: 201 }), () => subscribe({ endDate: T0 + 10 * DAY }), { discard: true })
      yield* TestClock.setTime(T0 + 10 * DAY)
      const expired = Ports.EventOutbox.use((o) => o.readAfter(0, 5000)).pipe(
        Effect.map((events) => events.filter((e) => e.type === "subscription.expired").length)
      )
      let requests = 0
      const busy = Effect.provideService(Services.RequestLoad, { busyShare: 0.1, requestsStarted: () => requests++ })
      const job = yield* Effect.forkChild(runDue.pipe(busy))
      // The batch yields between its moves: let it run to its commit (the clock does not move meanwhile).
      for (let turns = 0; turns < 100_000 && (yield* expired) < 200; turns++) yield* Effect.yieldNow
      // A batch under the TestClock takes no time: counted as 1 ms, so the rest is 9 ms.
      expect(yield* expired).toBe(200)
      yield* TestClock.adjust("8 millis")
      expect(yield* expired).toBe(200)
      yield* TestClock.adjust("1 millis")
      expect(yield* expired).toBe(201)
      // That batch moved one: one more (empty) batch after its rest ends the job.
      yield* TestClock.adjust("9 millis")
      expect(yield* Fiber.join(job)).toBe(201)
    })))

  it.effect("catches up after downtime: every move missed is made on the next run, each once", () =>
    onEngine(Effect.gen(function*() {
      const subs = yield* Subscriptions
      const trial = yield* subscribe({ trialDays: 7 })
      const ending = yield* subscribe({ endDate: T0 + 40 * DAY })
      yield* TestClock.setTime(T0 + 100 * DAY)
      // trial → active, then its payment failed → on-hold; the other expired at its end date
      expect(yield* runDue).toBe(3)
      expect(yield* runDue).toBe(0)
      expect((yield* subs.get(trial.subscription.id)).subscription.status).toBe("on-hold")
      expect((yield* subs.get(ending.subscription.id)).subscription.status).toBe("expired")
      expect((yield* eventTypes).filter((t) => t.startsWith("subscription.")).sort()).toEqual(
        ["subscription.created", "subscription.created", "subscription.expired", "subscription.payment_failed", "subscription.updated"].sort()
      )
    })))
})
