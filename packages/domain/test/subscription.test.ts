/**
 * The subscription state machine (CONTRACT §10): every action from every status against a reference written
 * from the contract, the forbidden moves as 409 `invalid_transition` with `data.from` and `data.action`, the
 * period arithmetic of renew and switch, the clock's moves and how the bound license follows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { DAY, failureOf, makeLicense, successOf } from "./fixtures.js"
import { License, Model, Subscription } from "@lm/domain"

const JAN31 = Date.UTC(2027, 0, 31)

const signedUp = (patch: Partial<Subscription.NewSubscription> = {}, now = JAN31): Model.Subscription => {
  const { draft } = successOf(
    Subscription.signup(
      {
        userId: 7,
        productId: null,
        billingPeriod: "month",
        billingInterval: 1,
        amount: 3000,
        currency: "USD",
        paymentMethod: null,
        trialDays: 0,
        startDate: null,
        endDate: null,
        items: [],
        ...patch
      },
      now
    )
  )
  return { ...draft, id: 1, licenseId: 10, revision: 1 }
}

const withStatus = (status: Model.SubscriptionStatus): Model.Subscription => ({ ...signedUp(), status })

// ---- reference, from the contract ------------------------------------------------------------------------

const live = ["pending", "trial", "active", "on-hold", "pending-cancel"] as const
const reference: Record<Model.SubscriptionAction, Partial<Record<Model.SubscriptionStatus, Model.SubscriptionStatus>>> = {
  pause: { active: "on-hold", trial: "on-hold" },
  resume: { "on-hold": "active", "pending-cancel": "active" },
  cancel: Object.fromEntries(live.map((s) => [s, "cancelled"])),
  cancel_at_period_end: { trial: "pending-cancel", active: "pending-cancel" },
  renew: { pending: "active", trial: "active", active: "active", "on-hold": "active" },
  switch: { trial: "trial", active: "active" },
  update: Object.fromEntries(live.map((s) => [s, s])),
  payment_failed: { active: "on-hold" },
  trial_end: { trial: "active" },
  period_end: { "pending-cancel": "cancelled" },
  end_date: Object.fromEntries(live.map((s) => [s, "expired"]))
}

describe("subscription state machine", () => {
  it("allows exactly the contract's moves; every other is invalid_transition naming from and action", () => {
    for (const action of Model.subscriptionActions) {
      for (const status of Model.subscriptionStatuses) {
        const result = Subscription.nextStatus(status, action)
        const expected = reference[action][status]
        if (expected === undefined) {
          const error = failureOf(result)
          expect({ code: error.code, status: error.status, from: error.from, action: error.action }).toEqual({
            code: "invalid_transition",
            status: 409,
            from: status,
            action
          })
        } else {
          expect(successOf(result)).toBe(expected)
        }
      }
    }
  })

  it("cancelled and expired are final", () => {
    for (const status of ["cancelled", "expired"] as const) {
      const sub = withStatus(status)
      expect(Result.isFailure(Subscription.pause(sub, JAN31))).toBe(true)
      expect(Result.isFailure(Subscription.resume(sub, JAN31))).toBe(true)
      expect(Result.isFailure(Subscription.renew(sub, JAN31, null))).toBe(true)
      expect(Result.isFailure(Subscription.cancel(sub, false, JAN31))).toBe(true)
      expect(Subscription.dueMove({ ...sub, endDate: JAN31 }, JAN31 + DAY, 3)).toBeNull()
    }
  })
})

describe("signup", () => {
  it("starts active with its first period paid, from start_date (default now), anchored at the start", () => {
    const { draft, renewal } = successOf(
      Subscription.signup({ userId: 1, productId: 2, billingPeriod: "month", billingInterval: 1, amount: 3000, currency: "USD", paymentMethod: "card", trialDays: 0, startDate: null, endDate: null, items: [] }, JAN31)
    )
    expect(draft.status).toBe("active")
    expect([draft.currentPeriodStart, draft.currentPeriodEnd, draft.nextPaymentAt]).toEqual([JAN31, Date.UTC(2027, 1, 28), Date.UTC(2027, 1, 28)])
    expect(renewal).toMatchObject({ type: "signup", status: "paid", amount: 3000, periodStart: JAN31, periodEnd: Date.UTC(2027, 1, 28) })
  })

  it("with a trial: status trial, the trial is the first period and the first payment is due at its end", () => {
    const sub = signedUp({ trialDays: 14 })
    expect(sub.status).toBe("trial")
    expect(sub.trialEnd).toBe(JAN31 + 14 * DAY)
    expect(sub.currentPeriodEnd).toBe(JAN31 + 14 * DAY)
    expect(sub.nextPaymentAt).toBe(JAN31 + 14 * DAY)
  })

  it("refuses bad input naming the field", () => {
    const base = { userId: 1, productId: null, billingPeriod: "month" as const, billingInterval: 1, amount: 100, currency: "USD", paymentMethod: null, trialDays: 0, startDate: null, endDate: null, items: [] }
    const field = (patch: Partial<Subscription.NewSubscription>) => Object.keys(failureOf(Subscription.signup({ ...base, ...patch }, JAN31)).params)
    expect(field({ billingInterval: 0 })).toEqual(["billing_interval"])
    expect(field({ billingInterval: 366 })).toEqual(["billing_interval"])
    expect(field({ currency: "XXY" })).toEqual(["currency"])
    expect(field({ amount: -1 })).toEqual(["amount"])
    expect(field({ trialDays: -1 })).toEqual(["trial_days"])
    expect(field({ endDate: JAN31 })).toEqual(["end_date"])
    expect(field({ items: [{ id: 1, productId: null, quantity: 0, amount: 1 }] })).toEqual(["items"])
  })
})

describe("actions", () => {
  it("renew early extends the period end by one period from its end (not from now), keeping the anchor day", () => {
    const sub = signedUp()
    const { subscription, renewal, events } = successOf(Subscription.renew(sub, JAN31 + DAY, "tx-1"))
    expect(subscription.currentPeriodEnd).toBe(Date.UTC(2027, 2, 31))
    expect(subscription.currentPeriodStart).toBe(JAN31)
    expect(renewal).toMatchObject({ type: "early_renewal", status: "paid", transactionId: "tx-1", periodStart: Date.UTC(2027, 1, 28), periodEnd: Date.UTC(2027, 2, 31) })
    expect(events.map((e) => e.type)).toEqual(["subscription.renewed"])
  })

  it("renew after the period ended is a renewal starting the next period; from on-hold it reactivates", () => {
    const held = successOf(Subscription.pause(signedUp(), JAN31 + DAY)).subscription
    const late = Date.UTC(2027, 2, 2)
    const { subscription, renewal } = successOf(Subscription.renew(held, late, null))
    expect(subscription.status).toBe("active")
    expect(subscription.pausedAt).toBeNull()
    expect([subscription.currentPeriodStart, subscription.currentPeriodEnd]).toEqual([Date.UTC(2027, 1, 28), Date.UTC(2027, 2, 31)])
    expect(renewal?.type).toBe("renewal")
  })

  it("cancel now is final at once; at the period end it waits in pending-cancel and resume undoes it", () => {
    const sub = signedUp()
    expect(successOf(Subscription.cancel(sub, false, JAN31 + DAY)).subscription).toMatchObject({ status: "cancelled", cancelledAt: JAN31 + DAY })
    const pending = successOf(Subscription.cancel(sub, true, JAN31 + DAY)).subscription
    expect(pending).toMatchObject({ status: "pending-cancel", cancelAtPeriodEnd: true, cancelledAt: null })
    expect(successOf(Subscription.resume(pending, JAN31 + 2 * DAY)).subscription).toMatchObject({ status: "active", cancelAtPeriodEnd: false })
  })

  it("switch with the same period length prorates over the rest of the period and keeps it", () => {
    const sub = signedUp({ startDate: Date.UTC(2027, 3, 1) }, Date.UTC(2027, 3, 1)) // April: 30 days
    const now = Date.UTC(2027, 3, 21) // 10 days left
    const { subscription, renewal } = successOf(Subscription.switchPlan(sub, { amount: 6000 }, now))
    expect(renewal?.proration).toEqual({ credit: 1000, charge: 2000, net: 1000 })
    expect(renewal).toMatchObject({ type: "switch", amount: 1000, from: { amount: 3000 }, to: { amount: 6000 } })
    expect(subscription.currentPeriodEnd).toBe(sub.currentPeriodEnd)
    expect(subscription.amount).toBe(6000)
  })

  it("switch to a new period length starts a new period now: net = new amount − credit", () => {
    const sub = signedUp({ startDate: Date.UTC(2027, 3, 1) }, Date.UTC(2027, 3, 1))
    const now = Date.UTC(2027, 3, 16) // 15 of 30 days left
    const { subscription, renewal } = successOf(Subscription.switchPlan(sub, { amount: 30000, billingPeriod: "year" }, now))
    expect(renewal?.proration).toEqual({ credit: 1500, charge: 30000, net: 28500 })
    expect([subscription.currentPeriodStart, subscription.currentPeriodEnd, subscription.billingAnchor]).toEqual([now, Date.UTC(2028, 3, 16), now])
  })

  it("update refuses a bad interval and a final subscription", () => {
    const bad = failureOf(Subscription.update(signedUp(), { billingInterval: 0 }, JAN31))
    expect(bad._tag === "InvalidParam" && Object.keys(bad.params)).toEqual(["billing_interval"])
    expect(failureOf(Subscription.update(withStatus("expired"), { amount: 1 }, JAN31)).code).toBe("invalid_transition")
  })
})

describe("the clock's moves", () => {
  it("payment fails grace days after an unpaid period end: on-hold, with a failed renewal record", () => {
    const sub = signedUp()
    const due = sub.nextPaymentAt! + 3 * DAY
    expect(Subscription.dueMove(sub, due - 1, 3)).toBeNull()
    expect(Subscription.nextDueAt(sub, 3)).toBe(due)
    const move = Subscription.dueMove(sub, due, 3)!
    expect(move).toEqual({ action: "payment_failed", dueAt: due })
    const { subscription, renewal, events } = successOf(Subscription.applyDue(sub, move, due))
    expect(subscription.status).toBe("on-hold")
    expect(renewal).toMatchObject({ type: "renewal", status: "failed" })
    expect(events.map((e) => e.type)).toEqual(["subscription.payment_failed"])
  })

  it("a paid renewal moves the payment due date, so nothing fails", () => {
    const paid = successOf(Subscription.renew(signedUp(), JAN31 + DAY, null)).subscription
    expect(Subscription.dueMove(paid, Date.UTC(2027, 2, 5), 3)).toBeNull()
  })

  it("pending-cancel becomes cancelled at the period end, recorded at that moment even when the job runs late", () => {
    const pending = successOf(Subscription.cancel(signedUp(), true, JAN31 + DAY)).subscription
    const late = pending.currentPeriodEnd + 10 * DAY
    const move = Subscription.dueMove(pending, late, 3)!
    expect(move.action).toBe("period_end")
    expect(successOf(Subscription.applyDue(pending, move, late)).subscription).toMatchObject({ status: "cancelled", cancelledAt: pending.currentPeriodEnd })
  })

  it("the end date expires it before anything else; a trial ends into active", () => {
    const ending = { ...signedUp({ trialDays: 7 }), endDate: JAN31 + 3 * DAY }
    expect(Subscription.dueMove(ending, JAN31 + 8 * DAY, 3)).toEqual({ action: "end_date", dueAt: JAN31 + 3 * DAY })
    const trial = signedUp({ trialDays: 7 })
    const move = Subscription.dueMove(trial, JAN31 + 7 * DAY, 3)!
    expect(move.action).toBe("trial_end")
    expect(successOf(Subscription.applyDue(trial, move, JAN31 + 7 * DAY)).subscription.status).toBe("active")
  })
})

describe("the bound license follows", () => {
  const license = makeLicense({ expiresAt: null, graceDays: 5 })

  it("expires at the period end; on-hold suspends it as the subscription's suspension; resume lifts it", () => {
    const sub = signedUp()
    const running = Subscription.followLicense(license, sub, JAN31)
    expect(running.license.expiresAt).toBe(sub.currentPeriodEnd)
    const held = Subscription.followLicense(running.license, { ...sub, status: "on-hold" }, JAN31)
    expect([held.license.state, held.license.suspendedBy]).toEqual(["suspended", "subscription"])
    const back = Subscription.followLicense(held.license, sub, JAN31)
    expect([back.license.state, back.license.suspendedBy]).toEqual(["issued", null])
  })

  it("never lifts an administrator's suspension", () => {
    const suspended = { ...license, state: "suspended" as const, suspendedBy: "administrator" as const }
    const after = Subscription.followLicense(suspended, signedUp(), JAN31)
    expect([after.license.state, after.license.suspendedBy]).toEqual(["suspended", "administrator"])
  })

  it("an administrator's suspend of a license its subscription suspended takes the suspension over", () => {
    const held = Subscription.followLicense(license, { ...signedUp(), status: "on-hold" }, JAN31).license
    const taken = License.applyLicenseAction(held, "suspend", JAN31, 0)
    const admin = successOf(taken).license
    expect([admin.state, admin.suspendedBy]).toEqual(["suspended", "administrator"])
    expect(successOf(taken).events).toEqual([])
    // the subscription's resume no longer lifts it
    expect(Subscription.followLicense(admin, signedUp(), JAN31).license.state).toBe("suspended")
  })

  it("cancelled and expired end it now with no grace", () => {
    for (const status of ["cancelled", "expired"] as const) {
      const ended = Subscription.followLicense(license, withStatus(status), JAN31 + DAY)
      expect([ended.license.expiresAt, ended.license.graceDays]).toEqual([JAN31 + DAY, 0])
    }
  })

  it("property: after any sequence of actions the license's state matches the subscription's status", () => {
    const actionArb = fc.constantFrom("pause", "resume", "cancel", "cancel_end", "renew", "clock")
    fc.assert(
      fc.property(fc.array(fc.tuple(actionArb, fc.integer({ min: 0, max: 40 })), { maxLength: 25 }), fc.boolean(), (steps, adminSuspends) => {
        let sub = signedUp()
        let lic = makeLicense({ expiresAt: null, graceDays: 2, state: adminSuspends ? "suspended" : "issued", suspendedBy: adminSuspends ? "administrator" : null })
        let now = JAN31
        for (const [action, days] of steps) {
          now += days * DAY
          const result =
            action === "pause" ? Subscription.pause(sub, now)
            : action === "resume" ? Subscription.resume(sub, now)
            : action === "cancel" ? Subscription.cancel(sub, false, now)
            : action === "cancel_end" ? Subscription.cancel(sub, true, now)
            : action === "renew" ? Subscription.renew(sub, now, null)
            : (() => {
              const due = Subscription.dueMove(sub, now, 3)
              return due === null ? Result.fail(null) : Subscription.applyDue(sub, due, now)
            })()
          if (Result.isFailure(result)) continue
          sub = result.success.subscription
          lic = Subscription.followLicense(lic, sub, now).license
          if (adminSuspends) expect(lic.state).toBe("suspended")
          else expect(lic.state).toBe(sub.status === "on-hold" ? "suspended" : "issued")
          if (Subscription.isFinal(sub.status)) expect(lic.expiresAt! + lic.graceDays * DAY).toBeLessThanOrEqual(now)
          else expect(lic.expiresAt).toBe(sub.currentPeriodEnd)
        }
      })
    )
  })
})
