/**
 * Model-based test of the licensing core: random sequences of client calls, admin actions, sweeps and clock
 * moves run against the services on the memory store and against the independent reference model in
 * `reference.ts`. After every step the two must agree on what the call answered, how many machines hold a seat
 * (never more than the ceiling), the license's status and expiry, and each machine's status.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { Licenses, Licensing, Machines, Sweeper } from "@lm/domain"
import { onEngine } from "../../packages/domain/test/engine.js"
import { T0 } from "../../packages/domain/test/fixtures.js"
import { LicenseModel, type ModelSettings, type ModelStrategy, type Outcome } from "./reference.js"

const FINGERPRINTS = ["a", "b", "c", "d"] as const
const DAY = 86_400_000

type Step =
  | { readonly op: "activate" | "deactivate" | "adminDeactivate" | "heartbeat" | "revokeMachine"; readonly fp: string }
  | { readonly op: "validate"; readonly fp: string | null }
  | { readonly op: "suspend" | "revoke" | "reinstate" | "terminate" | "sweep" }
  | { readonly op: "renew"; readonly days: number }
  | { readonly op: "advance"; readonly ms: number }

const fpArb = fc.constantFrom(...FINGERPRINTS)

/** Steps for a license with these settings: clock moves are scaled to its lease and heartbeat window. */
const stepArbFor = (settings: ModelSettings): fc.Arbitrary<Step> => {
  const lease = settings.leaseDuration * 1000
  const window = 2 * settings.heartbeatInterval * 1000
  const advance = (ms: fc.Arbitrary<number>) => fc.record({ op: fc.constant("advance" as const), ms })
  return fc.oneof(
    { weight: 10, arbitrary: fc.record({ op: fc.constant("activate" as const), fp: fpArb }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("deactivate" as const), fp: fpArb }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("adminDeactivate" as const), fp: fpArb }) },
    { weight: 8, arbitrary: fc.record({ op: fc.constant("heartbeat" as const), fp: fpArb }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("revokeMachine" as const), fp: fpArb }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("validate" as const), fp: fc.option(fpArb, { nil: null }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constantFrom("suspend" as const, "revoke" as const) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("reinstate" as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("terminate" as const) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant("sweep" as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("renew" as const), days: fc.integer({ min: 1, max: 3 }) }) },
    // Within a lease or heartbeat window, exactly one of them, one millisecond, or days (expiry).
    { weight: 8, arbitrary: advance(fc.integer({ min: 1, max: Math.max(lease, window) })) },
    { weight: 2, arbitrary: advance(fc.constantFrom(lease, window, 1)) },
    { weight: 1, arbitrary: advance(fc.integer({ min: 1, max: 2 * DAY })) }
  )
}

const settingsArb: fc.Arbitrary<ModelSettings> = fc.record({
  maxActivations: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null, freq: 5 }),
  overageStrategy: fc.constantFrom<ModelStrategy>("deny", "allow_1_25x", "allow_1_5x", "allow_2x"),
  isFloating: fc.boolean(),
  leaseDuration: fc.integer({ min: 30, max: 600 }),
  requireHeartbeat: fc.boolean(),
  heartbeatInterval: fc.integer({ min: 15, max: 300 }),
  validForDays: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
  graceDays: fc.integer({ min: 0, max: 1 })
})

const expiresAtArb = fc.option(fc.integer({ min: 1, max: 4 * 24 }).map((h) => T0 + h * 3_600_000), { nil: null, freq: 2 })

/** A license's settings and expiry, and up to 30 steps on it. */
const scenarioArb = settingsArb.chain((settings) =>
  fc.record({ settings: fc.constant(settings), expiresAt: expiresAtArb, steps: fc.array(stepArbFor(settings), { minLength: 5, maxLength: 30, size: "max" }) })
)

/** Corners the sequences reach, counted over a whole run so that the comparison is known not to be vacuous. */
interface Reached {
  limitRefused: number
  reactivated: number
  beat: number
  deadBeat: number
  revokedMachine: number
  swept: number
  terminated: number
  invalidTransition: number
  expired: number
}

/** A call's outcome in the model's terms. */
const outcomeOf = <A, E extends { readonly _tag: string; readonly code?: string }, R>(
  effect: Effect.Effect<A, E, R>,
  describe: (a: A) => Partial<Outcome> = () => ({})
) =>
  Effect.match(effect, {
    onSuccess: (a): Outcome => ({ ok: true, ...describe(a) }) as Outcome,
    onFailure: (e): Outcome => (e.code === undefined ? { ok: false, tag: e._tag } : { ok: false, tag: e._tag, code: e.code })
  })

const runSequence = (settings: ModelSettings, expiresAt: number | null, steps: ReadonlyArray<Step>, reached: Reached) =>
  Effect.gen(function*() {
    const licenses = yield* Licenses
    const licensing = yield* Licensing
    const machines = yield* Machines
    const sweeper = yield* Sweeper
    const key = (yield* licenses.create({ ...settings, expiresAt })).license.key
    const model = new LicenseModel(settings, expiresAt, T0)
    let modelIds = 0
    /** The service's machine id for each of the model's: a re-activation must reuse the record. */
    const serviceId = new Map<number, number>()
    const client = { ipAddress: "198.51.100.1", licenseKey: key }

    for (const [index, step] of steps.entries()) {
      const where = `step ${index} ${JSON.stringify(step)} of ${JSON.stringify(steps.slice(0, index + 1))}`
      let actual: Outcome | undefined
      let expected: Outcome | undefined
      const idOf = (fp: string) => {
        const id = model.machines.get(fp)?.id
        return id === undefined ? undefined : serviceId.get(id)
      }
      switch (step.op) {
        case "activate": {
          const earlier = model.machines.get(step.fp)
          if (earlier !== undefined && !model.holds(earlier) && earlier.status !== "revoked") reached.reactivated++
          actual = yield* outcomeOf(licensing.activate({ ...client, facts: { fingerprint: step.fp } }), (r) => ({ created: r.created, machineId: r.machine.id }))
          expected = model.activate(step.fp, () => ++modelIds)
          break
        }
        case "deactivate":
          actual = yield* outcomeOf(licensing.deactivate({ ...client, fingerprint: step.fp }), (r) => ({ machineId: r.machine.id }))
          expected = model.deactivate(step.fp)
          break
        case "adminDeactivate": {
          const id = idOf(step.fp)
          if (id === undefined) continue
          actual = yield* outcomeOf(machines.deactivate(id), (m) => ({ machineId: m.id }))
          expected = model.deactivate(step.fp)
          break
        }
        case "revokeMachine": {
          const id = idOf(step.fp)
          if (id === undefined) continue
          actual = yield* outcomeOf(machines.revoke(id), (m) => ({ machineId: m.id }))
          expected = model.revokeMachine(step.fp)
          reached.revokedMachine++
          break
        }
        case "heartbeat":
          actual = yield* outcomeOf(licensing.heartbeat({ ...client, fingerprint: step.fp }), (r) => ({ machineId: r.machine.id }))
          expected = model.heartbeat(step.fp)
          break
        case "validate": {
          const { validation } = yield* licensing.validate({ ...client, fingerprint: step.fp })
          expect({ code: validation.code, needsActivation: validation.needsActivation }, where).toEqual(model.validate(step.fp))
          break
        }
        case "suspend":
        case "revoke":
        case "reinstate":
          actual = yield* outcomeOf(licenses[step.op](key))
          expected = model.action(step.op)
          break
        case "terminate":
          if (model.state !== "terminated") reached.terminated++
          actual = yield* outcomeOf(licenses.terminate(key, true))
          expected = model.terminate()
          break
        case "renew":
          actual = yield* outcomeOf(licenses.renew(key, { _tag: "ExtendDays", days: step.days }))
          expected = model.renewDays(step.days)
          break
        case "sweep": {
          const swept = model.sweep()
          expect(yield* sweeper.sweepOnce, where).toBe(swept)
          if (swept > 0) reached.swept++
          break
        }
        case "advance":
          yield* TestClock.adjust(step.ms)
          model.advance(step.ms)
          break
      }

      if (actual !== undefined && expected !== undefined) {
        const { machineId: actualId, ...actualRest } = actual as Outcome & { machineId?: number }
        const { machineId: modelId, ...expectedRest } = expected as Outcome & { machineId?: number }
        expect(actualRest, where).toEqual(expectedRest)
        if (!expected.ok && expected.tag === "MachineLimitExceeded") reached.limitRefused++
        if (!expected.ok && expected.tag === "MachineInactive") reached.deadBeat++
        if (!expected.ok && expected.tag === "InvalidTransition") reached.invalidTransition++
        if (expected.ok && step.op === "heartbeat") reached.beat++
        if (modelId !== undefined) {
          expect(actualId, where).toBeDefined()
          const known = serviceId.get(modelId)
          if (known === undefined) serviceId.set(modelId, actualId!)
          else expect(actualId, where).toBe(known)
        }
      }

      const detail = yield* licenses.get(key)
      expect(detail.activationCount, where).toBe(model.seatsHeld)
      if (model.ceiling !== null) expect(detail.activationCount, where).toBeLessThanOrEqual(model.ceiling)
      expect(detail.status, where).toBe(model.status)
      expect(detail.license.expiresAt, where).toBe(model.expiresAt)
      expect(detail.license.activatedAt, where).toBe(model.activatedAt)
      const statuses = Object.fromEntries(detail.machines.map((m) => [m.fingerprint, m.status]))
      const modelStatuses = Object.fromEntries([...model.machines].map(([fp, m]) => [fp, m.status]))
      expect(statuses, where).toEqual(modelStatuses)
      if (model.status === "expired") reached.expired++
    }
    return model
  })

describe("licensing model", () => {
  it("services on the memory store agree with the reference model over random sequences", async () => {
    const reached: Reached = { limitRefused: 0, reactivated: 0, beat: 0, deadBeat: 0, revokedMachine: 0, swept: 0, terminated: 0, invalidTransition: 0, expired: 0 }
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ settings, expiresAt, steps }) => {
        await Effect.runPromise(onEngine(runSequence(settings, expiresAt, steps, reached)).pipe(Effect.provide(TestClock.layer())))
      }),
      { numRuns: 150 }
    )
    // Each corner is reached dozens of times in a run of 100 sequences (a miss would be a broken generator).
    for (const [corner, count] of Object.entries(reached)) expect(count, corner).toBeGreaterThan(0)
  })
})
