/**
 * Model-based test of policies and entitlements (issue 29): random sequences of policy creates, entitlement changes
 * on policies and licenses, moves of licenses between policies, deletes, `apply` and validations asking for codes
 * run against the whole engine (`Engine.layer`: the validation cache in front of the memory store) and against a
 * simple reference model (maps of sets). After every step both agree on each license's effective entitlements
 * (the union of its own and its policy's, live), each policy's license count, what validate answers
 * (`valid` or `entitlements_missing` with `missing`) and on `policy_in_use`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as fc from "fast-check"
import { Engine, Licenses, Licensing, Policies } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"

const CODES = ["export", "sync", "team", "beta"] as const
const LICENSES = 3
const masterKey = Redacted.make(new Uint8Array(32).fill(3))

type Step =
  | { readonly op: "createPolicy"; readonly codes: ReadonlyArray<string>; readonly max: number }
  | { readonly op: "setPolicyCodes"; readonly policy: number; readonly codes: ReadonlyArray<string>; readonly max: number }
  | { readonly op: "setLicenseCodes"; readonly license: number; readonly codes: ReadonlyArray<string> }
  | { readonly op: "move"; readonly license: number; readonly policy: number | null }
  | { readonly op: "deletePolicy"; readonly policy: number }
  | { readonly op: "apply"; readonly policy: number }
  | { readonly op: "validate"; readonly license: number; readonly required: ReadonlyArray<string> }

const codesArb = fc.subarray([...CODES])
const policyArb = fc.integer({ min: 0, max: 1 })
const licenseArb = fc.integer({ min: 0, max: LICENSES - 1 })
const maxArb = fc.integer({ min: 1, max: 5 })
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ op: fc.constant("createPolicy" as const), codes: codesArb, max: maxArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("setPolicyCodes" as const), policy: policyArb, codes: codesArb, max: maxArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("setLicenseCodes" as const), license: licenseArb, codes: codesArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("move" as const), license: licenseArb, policy: fc.option(policyArb, { nil: null }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("deletePolicy" as const), policy: policyArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("apply" as const), policy: policyArb }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("validate" as const), license: licenseArb, required: fc.subarray([...CODES], { minLength: 1 }) }) }
)

/** The reference: policies (codes, seat limit) by creation index, licenses (own codes, policy index, seat limit). */
interface Model {
  readonly policies: Array<{ codes: Set<string>; max: number; deleted: boolean } | undefined>
  readonly licenses: Array<{ codes: Set<string>; policy: number | null; max: number | null }>
}

const sorted = (codes: Iterable<string>) => [...codes].sort()
const effective = (model: Model, i: number) => {
  const license = model.licenses[i]!
  const policy = license.policy === null ? undefined : model.policies[license.policy]
  return sorted(new Set([...license.codes, ...(policy?.codes ?? [])]))
}

interface Reached {
  missing: number
  valid: number
  inUse: number
  deleted: number
  applied: number
}

const run = (steps: ReadonlyArray<Step>, reached: Reached) =>
  Effect.gen(function*() {
    const policies = yield* Policies
    const licenses = yield* Licenses
    const licensing = yield* Licensing
    const model: Model = { policies: [], licenses: [] }
    /** The service's id of each policy the model created, by creation index. */
    const ids: Array<number> = []
    const keys: Array<string> = []
    for (let i = 0; i < LICENSES; i++) {
      keys.push((yield* licenses.create({})).license.key)
      model.licenses.push({ codes: new Set(), policy: null, max: null })
    }
    const live = (p: number) => p < ids.length && model.policies[p]?.deleted === false

    for (const [n, step] of steps.entries()) {
      const where = `step ${n}: ${JSON.stringify(step)}`
      switch (step.op) {
        case "createPolicy": {
          const { policy } = yield* policies.create({ name: `P${ids.length}`, entitlements: step.codes, maxActivations: step.max })
          ids.push(policy.id)
          model.policies.push({ codes: new Set(step.codes), max: step.max, deleted: false })
          break
        }
        case "setPolicyCodes":
          if (!live(step.policy)) break
          yield* policies.update(ids[step.policy]!, { entitlements: step.codes, maxActivations: step.max })
          model.policies[step.policy] = { ...model.policies[step.policy]!, codes: new Set(step.codes), max: step.max }
          break
        case "setLicenseCodes":
          yield* licenses.update(keys[step.license]!, { entitlements: step.codes })
          model.licenses[step.license]!.codes = new Set(step.codes)
          break
        case "move": {
          if (step.policy !== null && !live(step.policy)) break
          const license = model.licenses[step.license]!
          yield* licenses.update(keys[step.license]!, { policyId: step.policy === null ? null : ids[step.policy]! })
          // Moved to another policy: its settings come with it; staying or detaching keeps the license's own.
          if (step.policy !== null && step.policy !== license.policy) license.max = model.policies[step.policy]!.max
          license.policy = step.policy
          break
        }
        case "deletePolicy": {
          if (!live(step.policy)) break
          const inUse = model.licenses.some((l) => l.policy === step.policy)
          const exit = yield* Effect.exit(policies.delete(ids[step.policy]!))
          if (inUse) {
            expect(exit._tag === "Failure" && JSON.stringify(exit.cause).includes("policy_in_use"), where).toBe(true)
            reached.inUse++
          } else {
            expect(exit._tag, where).toBe("Success")
            model.policies[step.policy]!.deleted = true
            reached.deleted++
          }
          break
        }
        case "apply": {
          if (!live(step.policy)) break
          const max = model.policies[step.policy]!.max
          const changed = model.licenses.filter((l) => l.policy === step.policy && l.max !== max)
          expect(yield* policies.apply(ids[step.policy]!), where).toEqual({ updated: changed.length })
          for (const license of changed) license.max = max
          if (changed.length > 0) reached.applied++
          break
        }
        case "validate": {
          const result = yield* licensing.validate({ licenseKey: keys[step.license]!, ipAddress: null, entitlements: step.required })
          const held = effective(model, step.license)
          const missing = step.required.filter((code) => !held.includes(code))
          expect([result.validation.code, result.validation.missing], where).toEqual(
            missing.length > 0 ? ["entitlements_missing", missing] : ["valid", []]
          )
          if (missing.length > 0) reached.missing++
          else reached.valid++
          break
        }
      }
      // After every step: each license's effective codes and settings, each live policy's license count.
      for (let i = 0; i < LICENSES; i++) {
        const detail = yield* licenses.get(keys[i]!)
        expect(detail.effectiveEntitlements, `${where}, license ${i}`).toEqual(effective(model, i))
        expect(detail.license.maxActivations, `${where}, license ${i}`).toBe(model.licenses[i]!.max)
        const policy = model.licenses[i]!.policy
        expect(detail.license.policyId, `${where}, license ${i}`).toBe(policy === null ? null : ids[policy])
      }
      for (let p = 0; p < ids.length; p++) {
        if (!live(p)) continue
        expect((yield* policies.get(ids[p]!)).licenseCount, `${where}, policy ${p}`).toBe(model.licenses.filter((l) => l.policy === p).length)
      }
    }
  })

describe("policies model", () => {
  it("the engine (validation cache in front of the memory store) agrees with the reference over random sequences", async () => {
    const reached: Reached = { missing: 0, valid: 0, inUse: 0, deleted: 0, applied: 0 }
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 10, maxLength: 50 }), async (steps) => {
        await Effect.runPromise(
          run(steps, reached).pipe(Effect.provide(Engine.layer(MemoryStore.layer, { sweepIntervalSeconds: 0, masterKey })), Effect.scoped)
        )
      }),
      { numRuns: 100 }
    )
    for (const [corner, count] of Object.entries(reached)) expect(count, corner).toBeGreaterThan(0)
  }, 120_000)
})
