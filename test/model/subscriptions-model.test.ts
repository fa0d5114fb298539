/**
 * Model-based test of subscriptions and their bound license: random sequences of the administrator's actions
 * (pause, resume, cancel now or at the period end, renew, switch, suspending and reinstating the license, also
 * while its subscription holds it suspended), clock moves past period ends and trial ends, and runs of the
 * period-end job, on the services over the memory store. After every step the license's status must be
 * consistent with the subscription's: on-hold → suspended (unless an administrator reinstated it since);
 * live → not suspended unless an administrator suspended it (never lifted by the subscription) and expiring at
 * the period end; cancelled or expired → refused; and after a job run nothing the clock has due is left.
 */
import { describe, expect, it } from "vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { type Errors, Licenses, Licensing, Subscription, Subscriptions } from "@lm/domain"
import { onEngine } from "../../packages/domain/test/engine.js"

const DAY = 86_400_000

type Step =
  | { readonly op: "pause" | "resume" | "cancelNow" | "cancelAtEnd" | "renew" | "adminSuspend" | "adminReinstate" | "job" }
  | { readonly op: "switch"; readonly amount: number; readonly yearly: boolean }
  | { readonly op: "advance"; readonly ms: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom("pause" as const, "resume" as const, "renew" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("cancelNow" as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom("adminSuspend" as const, "adminReinstate" as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("cancelAtEnd" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("switch" as const), amount: fc.integer({ min: 0, max: 100_000 }), yearly: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 45 * DAY }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("job" as const) }) }
)

const scenarioArb = fc.record({ trialDays: fc.constantFrom(0, 0, 7), steps: fc.array(stepArb, { minLength: 1, maxLength: 30 }) })

interface Reached { onHoldByClock: number; cancelledAtEnd: number; adminKept: number; adminTookOver: number; adminLifted: number; refused: number }

const run = (trialDays: number, steps: ReadonlyArray<Step>, reached: Reached) =>
  Effect.gen(function*() {
    const subs = yield* Subscriptions
    const created = yield* subs.create({
      subscription: { userId: 1, productId: null, billingPeriod: "month", billingInterval: 1, amount: 3000, currency: "EUR", paymentMethod: null, trialDays, startDate: null, endDate: null, items: [] }
    })
    const id = created.subscription.id
    const key = created.license.license.key
    // the administrator's suspension (never lifted by the subscription); and an administrator's reinstate of the
    // subscription's suspension, which stands until the subscription leaves on-hold
    let adminHold = false
    let adminLifted = false
    for (const [i, step] of steps.entries()) {
      const where = `step ${i}: ${JSON.stringify(step)}`
      const before = (yield* subs.get(id)).subscription.status
      switch (step.op) {
        case "advance":
          yield* TestClock.adjust(step.ms)
          break
        case "job":
          yield* subs.runDue
          break
        case "adminSuspend": {
          // also on a license its subscription suspended: the suspension becomes the administrator's
          const license = yield* Licenses.use((l) => l.get(key))
          if (license.status === "suspended" && !adminHold) reached.adminTookOver++
          yield* Licenses.use((l) => l.suspend(key))
          adminHold = true
          adminLifted = false
          break
        }
        case "adminReinstate": {
          const license = yield* Licenses.use((l) => l.get(key))
          if (license.status === "suspended") {
            yield* Licenses.use((l) => l.reinstate(key))
            // lifts whichever suspension it is, the subscription's included (the administrator's word)
            adminLifted = true
            adminHold = false
          }
          break
        }
        default: {
          const action: Effect.Effect<unknown, Errors.InvalidTransition | Errors.InvalidParam | Errors.SubscriptionNotFound | Errors.StorageUnavailable> = step.op === "pause" ? subs.pause(id)
            : step.op === "resume" ? subs.resume(id)
            : step.op === "cancelNow" ? subs.cancel(id, false)
            : step.op === "cancelAtEnd" ? subs.cancel(id, true)
            : step.op === "renew" ? subs.renew(id, null)
            : step.op === "switch" ? subs.switchPlan(id, { amount: step.amount, billingPeriod: step.yearly ? "year" : "month" })
            : Effect.void
          yield* action.pipe(Effect.catchTag("InvalidTransition", () => Effect.void))
        }
      }
      const { subscription, license } = yield* subs.get(id)
      const now = yield* Clock.currentTimeMillis
      if (subscription.status !== "on-hold") adminLifted = false
      if (step.op === "job") {
        expect(Subscription.dueMove(subscription, now, 3), where).toBeNull()
        if (before === "active" && subscription.status === "on-hold") reached.onHoldByClock++
        if (before === "pending-cancel" && subscription.status === "cancelled") reached.cancelledAtEnd++
      }
      if (subscription.status === "on-hold" && adminLifted) {
        expect(license.status, where).not.toBe("suspended")
        reached.adminLifted++
      } else if (subscription.status === "on-hold" || adminHold) {
        expect(license.status, where).toBe("suspended")
        if (adminHold && subscription.status !== "on-hold") reached.adminKept++
      } else if (Subscription.isFinal(subscription.status)) {
        yield* TestClock.adjust(1)
        const validation = (yield* Licensing.use((l) => l.validate({ licenseKey: key, ipAddress: null }))).validation
        expect(validation.code, where).toBe("license_expired")
        reached.refused++
      } else {
        expect(license.status, where).not.toBe("suspended")
        expect(license.license.expiresAt, where).toBe(subscription.currentPeriodEnd)
      }
    }
  })

describe("subscriptions model", () => {
  it("the bound license stays consistent with its subscription over random sequences", async () => {
    const reached: Reached = { onHoldByClock: 0, cancelledAtEnd: 0, adminKept: 0, adminTookOver: 0, adminLifted: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ trialDays, steps }) => {
        await Effect.runPromise(onEngine(run(trialDays, steps, reached)).pipe(Effect.provide(TestClock.layer())))
      }),
      { numRuns: 300 }
    )
    // each corner is reached in a run (a miss would be a broken generator)
    for (const [corner, count] of Object.entries(reached)) expect(count, corner).toBeGreaterThan(0)
  }, 120_000)
})
