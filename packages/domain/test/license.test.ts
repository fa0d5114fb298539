/**
 * The license state machine (CONTRACT §3, §14): actions, terminate, renew, update, reported status and the seat
 * ceiling, checked against a small reference written from the contract.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { DAY, failureOf, makeLicense, successOf, T0 } from "./fixtures.js"
import { License, Model } from "@lm/domain"

// ---- reference, from the contract ------------------------------------------------------------------------

/** CONTRACT §3: the status a license reports now. */
const referenceStatus = (license: Model.License, seats: number, now: number): Model.LicenseStatus => {
  if (license.state !== "issued") return license.state
  if (license.expiresAt !== null && now > license.expiresAt + license.graceDays * DAY) return "expired"
  return seats > 0 ? "active" : "inactive"
}

type Action = "suspend" | "revoke" | "reinstate"

/** Where each action may start from; its own target is a no-op. */
const referenceAllowed: Record<Action, ReadonlyArray<Model.License["state"]>> = {
  suspend: ["issued"],
  revoke: ["issued", "suspended"],
  reinstate: ["suspended", "revoked"]
}
const referenceTarget: Record<Action, Model.License["state"] | null> = { suspend: "suspended", revoke: "revoked", reinstate: null }

// ---- arbitraries -----------------------------------------------------------------------------------------

const stateArb = fc.constantFrom<Model.License["state"]>("pending", "issued", "suspended", "revoked", "terminated")
const startStateArb = fc.constantFrom<Model.License["state"]>("pending", "issued", "issued", "suspended", "revoked")
const expiresAtArb = fc.option(fc.integer({ min: -30, max: 30 }).map((d) => T0 + d * DAY), { nil: null })

const licenseArb = (state: fc.Arbitrary<Model.License["state"]> = startStateArb) =>
  fc.record({
    state,
    expiresAt: expiresAtArb,
    graceDays: fc.integer({ min: 0, max: 5 }),
    validForDays: fc.option(fc.integer({ min: 1, max: 365 }), { nil: null })
  }).map((patch) => makeLicense(patch))

const renewalArb: fc.Arbitrary<License.Renewal> = fc.oneof(
  fc.integer({ min: -60, max: 60 }).map((d): License.Renewal => ({ _tag: "Until", expiresAt: T0 + d * DAY })),
  fc.oneof(fc.integer({ min: -2, max: 400 }), fc.constant(1.5)).map((days): License.Renewal => ({ _tag: "ExtendDays", days })),
  fc.constant<License.Renewal>({ _tag: "ResetRelative" })
)

const patchArb: fc.Arbitrary<Partial<Model.LicenseSettings>> = fc.record(
  {
    maxActivations: fc.option(fc.integer({ min: 0, max: 10 }), { nil: null }),
    graceDays: fc.integer({ min: 0, max: 5 }),
    expiresAt: expiresAtArb,
    validForDays: fc.option(fc.integer({ min: 1, max: 365 }), { nil: null }),
    meta: fc.constant({ note: "x" })
  },
  { requiredKeys: [] }
)

type Step =
  | { readonly _tag: "action"; readonly action: Action; readonly seats: number }
  | { readonly _tag: "terminate"; readonly confirm: boolean }
  | { readonly _tag: "renew"; readonly renewal: License.Renewal }
  | { readonly _tag: "update"; readonly patch: Partial<Model.LicenseSettings> }
  | { readonly _tag: "wait"; readonly ms: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ _tag: fc.constant("action" as const), action: fc.constantFrom<Action>("suspend", "revoke", "reinstate"), seats: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("terminate" as const), confirm: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("renew" as const), renewal: renewalArb }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("update" as const), patch: patchArb }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 20 * DAY }) }) }
)

// ---- properties ------------------------------------------------------------------------------------------

describe("license actions over random sequences", () => {
  it("never leave terminated, refuse writes on a terminated license, no-op on repeats, name forbidden moves", () => {
    const seen = { terminated: 0, invalid: 0, noop: 0, moved: 0 }
    fc.assert(
      fc.property(licenseArb(), fc.array(stepArb, { minLength: 1, maxLength: 40 }), (start, steps) => {
        let license = start
        let now = T0
        for (const step of steps) {
          const wasTerminated = license.state === "terminated"
          switch (step._tag) {
            case "wait":
              now += step.ms
              break
            case "action": {
              const result = License.applyLicenseAction(license, step.action, now, step.seats)
              if (wasTerminated) {
                expect(failureOf(result)._tag).toBe("LicenseTerminated")
                seen.terminated++
              } else if (referenceTarget[step.action] === license.state) {
                const change = successOf(result)
                expect(change.changed).toBe(false)
                expect(change.events).toEqual([])
                expect(change.license).toBe(license)
                seen.noop++
              } else if (referenceAllowed[step.action].includes(license.state)) {
                const change = successOf(result)
                expect(change.changed).toBe(true)
                expect(change.license.state).toBe(referenceTarget[step.action] ?? "issued")
                expect(change.license.revision).toBe(license.revision + 1)
                expect(change.license.updatedAt).toBe(now)
                expect(change.events.map((e) => e.type)).toEqual([`license.${step.action === "reinstate" ? "reinstated" : step.action === "suspend" ? "suspended" : "revoked"}`])
                license = change.license
                seen.moved++
              } else {
                const error = failureOf(result)
                expect(error._tag).toBe("InvalidTransition")
                if (error._tag !== "InvalidTransition") break
                expect(error.from).toBe(referenceStatus(license, step.seats, now))
                expect(error.action).toBe(step.action)
                expect(error.status).toBe(409)
                seen.invalid++
              }
              break
            }
            case "terminate": {
              const result = License.terminateLicense(license, step.confirm, now)
              if (!step.confirm) {
                expect(failureOf(result)._tag).toBe("ConfirmationRequired")
              } else if (wasTerminated) {
                const change = successOf(result)
                expect(change.changed).toBe(false)
                expect(change.events).toEqual([])
                expect(change.license).toBe(license)
              } else {
                const change = successOf(result)
                expect(change.license.state).toBe("terminated")
                expect(change.events.map((e) => e.type)).toEqual(["license.terminated"])
                license = change.license
              }
              break
            }
            case "renew": {
              const result = License.renewLicense(license, step.renewal, now)
              if (wasTerminated) {
                expect(failureOf(result)._tag).toBe("LicenseTerminated")
              } else if (Result.isSuccess(result)) {
                expect(result.success.license.state).toBe(license.state)
                license = result.success.license
              } else {
                expect(result.failure._tag).toBe("InvalidParam")
              }
              break
            }
            case "update": {
              const result = License.updateLicense(license, step.patch, now)
              if (wasTerminated) {
                expect(failureOf(result)._tag).toBe("LicenseTerminated")
              } else {
                const change = successOf(result)
                expect(change.license.state).toBe(license.state)
                license = change.license
              }
              break
            }
          }
          if (wasTerminated) expect(license.state).toBe("terminated")
        }
      }),
      { numRuns: 300 }
    )
    // The generators reach every branch, so none of the assertions above is vacuous.
    expect(seen.terminated).toBeGreaterThan(0)
    expect(seen.invalid).toBeGreaterThan(0)
    expect(seen.noop).toBeGreaterThan(0)
    expect(seen.moved).toBeGreaterThan(0)
  })
})

describe("actions, one by one", () => {
  const actions: ReadonlyArray<Action> = ["suspend", "revoke", "reinstate"]

  it("every write on a terminated license is license_terminated, except a repeated terminate", () => {
    const license = makeLicense({ state: "terminated" })
    for (const action of actions) {
      const error = failureOf(License.applyLicenseAction(license, action, T0, 0))
      expect(error._tag).toBe("LicenseTerminated")
      expect(error.code).toBe("license_terminated")
      expect(error.status).toBe(409)
    }
    expect(failureOf(License.renewLicense(license, { _tag: "ExtendDays", days: 1 }, T0))._tag).toBe("LicenseTerminated")
    expect(failureOf(License.updateLicense(license, { maxActivations: 3 }, T0))._tag).toBe("LicenseTerminated")
    const repeat = successOf(License.terminateLicense(license, true, T0))
    expect(repeat).toEqual({ license, events: [], changed: false })
  })

  it("terminate needs the confirm flag, whatever the state", () => {
    fc.assert(
      fc.property(stateArb, (state) => {
        const error = failureOf(License.terminateLicense(makeLicense({ state }), false, T0))
        expect(error._tag).toBe("ConfirmationRequired")
        expect(error.code).toBe("confirmation_required")
        expect(error.status).toBe(400)
      })
    )
  })

  it("terminate works from every other state and says where it came from", () => {
    fc.assert(
      fc.property(startStateArb, (state) => {
        const change = successOf(License.terminateLicense(makeLicense({ state }), true, T0 + 5))
        expect(change.license.state).toBe("terminated")
        expect(change.events).toHaveLength(1)
        expect(change.events[0]).toMatchObject({ type: "license.terminated", occurredAt: T0 + 5, licenseId: 1, data: { from: state } })
      })
    )
  })

  it("repeating suspend or revoke is a no-op without events", () => {
    for (const [state, action] of [["suspended", "suspend"], ["revoked", "revoke"]] as const) {
      const license = makeLicense({ state })
      expect(successOf(License.applyLicenseAction(license, action, T0, 0))).toEqual({ license, events: [], changed: false })
    }
  })

  it("reinstate of an issued license (a repeat included) is invalid_transition from its derived status", () => {
    const active = makeLicense()
    expect(failureOf(License.applyLicenseAction(active, "reinstate", T0, 2))).toMatchObject({ _tag: "InvalidTransition", from: "active", action: "reinstate" })
    expect(failureOf(License.applyLicenseAction(active, "reinstate", T0, 0))).toMatchObject({ from: "inactive", action: "reinstate" })
    const expired = makeLicense({ expiresAt: T0 - DAY })
    expect(failureOf(License.applyLicenseAction(expired, "reinstate", T0, 2))).toMatchObject({ from: "expired", action: "reinstate" })
    const reinstated = successOf(License.applyLicenseAction(makeLicense({ state: "suspended" }), "reinstate", T0, 0)).license
    expect(failureOf(License.applyLicenseAction(reinstated, "reinstate", T0, 0))).toMatchObject({ from: "inactive", action: "reinstate" })
  })

  it("suspend of a revoked license and any action on a pending key are invalid_transition", () => {
    expect(failureOf(License.applyLicenseAction(makeLicense({ state: "revoked" }), "suspend", T0, 1))).toMatchObject({ from: "revoked", action: "suspend" })
    for (const action of actions) {
      expect(failureOf(License.applyLicenseAction(makeLicense({ state: "pending" }), action, T0, 0))).toMatchObject({ from: "pending", action })
    }
  })

  it("reinstate lands on the derived status: active, inactive or expired by seats held and the clock", () => {
    const seen = new Set<Model.LicenseStatus>()
    fc.assert(
      fc.property(
        licenseArb(fc.constantFrom("suspended", "revoked")),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: -40 * DAY, max: 40 * DAY }),
        (license, seats, offset) => {
          const now = T0 + offset
          const change = successOf(License.applyLicenseAction(license, "reinstate", now, seats))
          expect(change.license.state).toBe("issued")
          expect(change.events.map((e) => e.type)).toEqual(["license.reinstated"])
          const status = License.licenseStatus(change.license, seats, now)
          expect(status).toBe(referenceStatus({ ...license, state: "issued" }, seats, now))
          seen.add(status)
        }
      )
    )
    expect([...seen].sort()).toEqual(["active", "expired", "inactive"])
  })
})

describe("reported status", () => {
  it("is expired only once now > expires_at + grace_days", () => {
    const license = makeLicense({ expiresAt: T0, graceDays: 3 })
    const end = T0 + 3 * DAY
    expect(License.isExpired(license, end)).toBe(false)
    expect(License.licenseStatus(license, 1, end)).toBe("active")
    expect(License.isExpired(license, end + 1)).toBe(true)
    expect(License.licenseStatus(license, 1, end + 1)).toBe("expired")
    expect(License.isExpired(makeLicense({ expiresAt: null }), Number.MAX_SAFE_INTEGER)).toBe(false)
  })

  it("matches the contract for any state, expiry, grace, seats and time", () => {
    fc.assert(
      fc.property(licenseArb(stateArb), fc.integer({ min: 0, max: 4 }), fc.integer({ min: -40 * DAY, max: 40 * DAY }), (license, seats, offset) => {
        expect(License.licenseStatus(license, seats, T0 + offset)).toBe(referenceStatus(license, seats, T0 + offset))
      })
    )
  })
})

describe("seat ceiling", () => {
  const strategies: ReadonlyArray<Model.OverageStrategy> = ["deny", "allow_1_25x", "allow_1_5x", "allow_2x"]
  const factor: Record<Model.OverageStrategy, number> = { deny: 1, allow_1_25x: 1.25, allow_1_5x: 1.5, allow_2x: 2 }

  it("is floor(max × factor) for every strategy and limit", () => {
    fc.assert(
      fc.property(fc.constantFrom(...strategies), fc.integer({ min: 0, max: 1_000_000 }), (strategy, max) => {
        // 1.25 and 1.5 are exact in binary, so the float product is the exact rational product.
        expect(License.seatCeiling(max, strategy)).toBe(Math.floor(max * factor[strategy]))
      })
    )
  })

  it("has the contract's values for small limits", () => {
    const table = (strategy: Model.OverageStrategy) => [1, 2, 3, 4, 5, 7].map((max) => License.seatCeiling(max, strategy))
    expect(table("deny")).toEqual([1, 2, 3, 4, 5, 7])
    expect(table("allow_1_25x")).toEqual([1, 2, 3, 5, 6, 8])
    expect(table("allow_1_5x")).toEqual([1, 3, 4, 6, 7, 10])
    expect(table("allow_2x")).toEqual([2, 4, 6, 8, 10, 14])
  })

  it("is unlimited (null) without a limit, and a seat is then always free", () => {
    fc.assert(
      fc.property(fc.constantFrom(...strategies), fc.nat(), (strategy, held) => {
        expect(License.seatCeiling(null, strategy)).toBeNull()
        expect(License.hasFreeSeat({ maxActivations: null, overageStrategy: strategy }, held)).toBe(true)
      })
    )
  })

  it("has a free seat exactly while fewer than the ceiling are held", () => {
    fc.assert(
      fc.property(fc.constantFrom(...strategies), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 120 }), (strategy, max, held) => {
        expect(License.hasFreeSeat({ maxActivations: max, overageStrategy: strategy }, held)).toBe(held < Math.floor(max * factor[strategy]))
      })
    )
  })
})

describe("renew", () => {
  it("extends by days from the later of now and the current expiry", () => {
    fc.assert(
      fc.property(fc.integer({ min: -60, max: 60 }), fc.integer({ min: 1, max: 3650 }), (expiryOffset, days) => {
        const license = makeLicense({ expiresAt: T0 + expiryOffset * DAY + 12_345 })
        const change = successOf(License.renewLicense(license, { _tag: "ExtendDays", days }, T0))
        expect(change.license.expiresAt).toBe(Math.max(T0, license.expiresAt!) + days * DAY)
        expect(change.events).toHaveLength(1)
        expect(change.events[0]).toMatchObject({
          type: "license.renewed",
          data: { previous_expires_at: license.expiresAt, expires_at: change.license.expiresAt }
        })
      })
    )
  })

  it("extends a perpetual license from now", () => {
    const change = successOf(License.renewLicense(makeLicense({ expiresAt: null }), { _tag: "ExtendDays", days: 30 }, T0 + 7))
    expect(change.license.expiresAt).toBe(T0 + 7 + 30 * DAY)
  })

  it("refuses days that are not a positive integer", () => {
    for (const days of [0, -1, 1.5, Number.NaN]) {
      const error = failureOf(License.renewLicense(makeLicense(), { _tag: "ExtendDays", days }, T0))
      expect(error._tag).toBe("InvalidParam")
      if (error._tag === "InvalidParam") expect(Object.keys(error.params)).toEqual(["days"])
    }
  })

  it("sets an absolute expiry as given", () => {
    const change = successOf(License.renewLicense(makeLicense({ expiresAt: T0 + 100 * DAY }), { _tag: "Until", expiresAt: T0 + DAY }, T0))
    expect(change.license.expiresAt).toBe(T0 + DAY)
  })

  it("resets relative validity to now + valid_for_days, and needs one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3650 }), expiresAtArb, fc.integer({ min: 0, max: 100 * DAY }), (validForDays, expiresAt, offset) => {
        const change = successOf(License.renewLicense(makeLicense({ validForDays, expiresAt }), { _tag: "ResetRelative" }, T0 + offset))
        expect(change.license.expiresAt).toBe(T0 + offset + validForDays * DAY)
      })
    )
    const error = failureOf(License.renewLicense(makeLicense({ validForDays: null, expiresAt: T0 }), { _tag: "ResetRelative" }, T0))
    expect(error._tag).toBe("InvalidParam")
    if (error._tag === "InvalidParam") expect(Object.keys(error.params)).toEqual(["valid_for_days"])
  })

  it("brings an expired license back to a derived status", () => {
    const expired = makeLicense({ expiresAt: T0 - 10 * DAY })
    expect(License.licenseStatus(expired, 0, T0)).toBe("expired")
    const renewed = successOf(License.renewLicense(expired, { _tag: "ExtendDays", days: 5 }, T0)).license
    expect(License.licenseStatus(renewed, 0, T0)).toBe("inactive")
  })
})

describe("update", () => {
  it("changes the settings, never the state, and records which fields", () => {
    fc.assert(
      fc.property(licenseArb(), patchArb, (license, patch) => {
        const change = successOf(License.updateLicense(license, patch, T0 + 1))
        expect(change.license).toEqual({ ...license, ...patch, updatedAt: T0 + 1, revision: license.revision + 1 })
        expect(change.events[0]).toMatchObject({ type: "license.updated", data: { fields: Object.keys(patch) } })
      })
    )
  })
})

describe("first activation", () => {
  it("sets activated_at and starts relative validity, once", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3650 }), fc.integer({ min: 0, max: 50 * DAY }), fc.integer({ min: 1, max: 50 * DAY }), (days, first, later) => {
        const fresh = makeLicense({ validForDays: days, expiresAt: null })
        const activated = License.recordFirstActivation(fresh, T0 + first)
        expect(activated.activatedAt).toBe(T0 + first)
        expect(activated.expiresAt).toBe(T0 + first + days * DAY)
        // A later activation leaves the license exactly as it is.
        expect(License.recordFirstActivation(activated, T0 + first + later)).toBe(activated)
      })
    )
  })

  it("keeps an explicit expiry and leaves licenses without relative validity perpetual", () => {
    const explicit = License.recordFirstActivation(makeLicense({ validForDays: 30, expiresAt: T0 + DAY }), T0)
    expect(explicit.expiresAt).toBe(T0 + DAY)
    expect(explicit.activatedAt).toBe(T0)
    const perpetual = License.recordFirstActivation(makeLicense({ validForDays: null }), T0)
    expect(perpetual.expiresAt).toBeNull()
  })

  it("does not start relative validity on a license activated before (even if its expiry was cleared)", () => {
    const earlier = makeLicense({ validForDays: 30, expiresAt: null, activatedAt: T0 - DAY })
    expect(License.recordFirstActivation(earlier, T0).expiresAt).toBeNull()
  })
})

describe("setting limits (CONTRACT §3, §14), checked by the domain for every way in", () => {
  const { checkLicenseSettings: check, settingLimits: limits } = License
  it("accepts every duration from 1 to 31,536,000 seconds and refuses the rest, naming the field", () => {
    fc.assert(
      fc.property(fc.integer({ min: -10, max: limits.maxDurationSeconds + 10 }), fc.constantFrom("leaseDuration", "heartbeatInterval"), (n, field) => {
        const result = check({ [field]: n })
        const ok = n >= 1 && n <= limits.maxDurationSeconds
        expect(Result.isSuccess(result)).toBe(ok)
        if (Result.isFailure(result)) {
          expect(Object.keys(result.failure.params)).toEqual([field === "leaseDuration" ? "lease_duration" : "heartbeat_interval"])
        }
      })
    )
    expect(Result.isFailure(check({ leaseDuration: 1.5 }))).toBe(true)
  })

  it("bounds seats, days and grace, and meta to 16 KiB of JSON", () => {
    expect(Result.isSuccess(check({ maxActivations: 0, validForDays: 1, graceDays: 0, meta: { a: "x".repeat(16_000) } }))).toBe(true)
    expect(Result.isSuccess(check({ maxActivations: null, validForDays: null }))).toBe(true)
    for (const bad of [{ maxActivations: -1 }, { validForDays: 0 }, { validForDays: 36_501 }, { graceDays: -1 }, { meta: { a: "x".repeat(16 * 1024) } }]) {
      expect(Result.isFailure(check(bad)), JSON.stringify(bad).slice(0, 40)).toBe(true)
    }
  })
})

describe("terminate confirmation", () => {
  it("is required: confirm true passes, anything else is confirmation_required (400), before any license is looked at", () => {
    expect(Result.isSuccess(License.confirmTermination(true))).toBe(true)
    const error = failureOf(License.confirmTermination(false))
    expect(error).toMatchObject({ _tag: "ConfirmationRequired", code: "confirmation_required", status: 400 })
    // terminateLicense refuses with the same error, whatever the state
    expect(failureOf(License.terminateLicense(makeLicense({ state: "terminated" }), false, T0))).toEqual(error)
  })
})

describe("pool draw", () => {
  const settings = { maxActivations: 3, validForDays: 30 }
  const pooled: Model.License = {
    ...makeLicense({ state: "pending", source: "generator", generatorId: 4, createdAt: T0, updatedAt: T0, revision: 1 }),
    ...settings
  }

  it("issues a pending key: state issued, source pool, creation time kept, revision advanced, announced as created", () => {
    const change = License.issueFromPool(pooled, {}, T0 + DAY)
    expect(change.changed).toBe(true)
    expect(change.license).toEqual({ ...pooled, state: "issued", source: "pool", updatedAt: T0 + DAY, revision: 2 })
    expect(change.events).toEqual([
      { type: "license.created", occurredAt: T0 + DAY, licenseId: pooled.id, machineId: null, data: { license_key: pooled.key, source: "pool" } }
    ])
  })

  it("keeps the settings the key was generated with; only the given fields change them", () => {
    const change = License.issueFromPool(pooled, { maxActivations: 9, meta: { order: "x" } }, T0 + 1)
    expect(change.license).toMatchObject({ maxActivations: 9, validForDays: 30, meta: { order: "x" }, generatorId: 4, createdAt: T0 })
  })

  it("draws what a generator put in its pool: a pending draft of the generator's settings", () => {
    const draft = License.newLicenseDraft("POOL-AAAA-BBBB-CCCC", settings, "generator", 4, T0, "pending")
    expect(draft).toMatchObject({ state: "pending", source: "generator", generatorId: 4, maxActivations: 3, activatedAt: null })
    expect(License.newLicenseDraft("PLAIN-AAAA-BBBB-CCCC", {}, "api", null, T0).state).toBe("issued")
  })
})
