/**
 * Validation's order (CONTRACT §4, §14, §15): licenses and machines that fail several checks at once answer the
 * first code in the contract's order (`entitlements_missing` after the license checks, before the machine checks,
 * naming the codes not held); `needs_activation` is true only when a seat is free.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Entitlements, Model, Validation } from "@lm/domain"
import { DAY, makeLicense, makeMachine, SECOND, T0 } from "./fixtures.js"

/** The contract's order, written out again so that a reordered `validationCodes` fails here. */
const ORDER = [
  "blacklisted",
  "license_terminated",
  "license_revoked",
  "license_suspended",
  "license_pending",
  "license_expired",
  "entitlements_missing",
  "machine_limit_exceeded",
  "machine_revoked",
  "fingerprint_not_activated",
  "valid"
] as const

const FACTOR: Record<Model.OverageStrategy, number> = { deny: 1, allow_1_25x: 1.25, allow_1_5x: 1.5, allow_2x: 2 }

/** The fingerprint's own record, if any. */
type Own = "none" | "holding" | "dead" | "inactive" | "revoked"

interface Scenario {
  readonly blacklisted: boolean
  readonly state: Model.License["state"]
  readonly expired: boolean
  readonly maxActivations: number | null
  readonly strategy: Model.OverageStrategy
  /** Machines of other fingerprints holding a seat. */
  readonly others: number
  /** Machines still `active` whose heartbeat died: they must never count. */
  readonly dead: number
  readonly fingerprint: string | null
  readonly own: Own
  /** The license's own codes, its policy's codes, and the codes the client asks for. */
  readonly ownCodes: ReadonlyArray<string>
  readonly policyCodes: ReadonlyArray<string> | undefined
  readonly required: ReadonlyArray<string> | undefined
}

const CODES = ["export", "sync", "team"] as const
const codesArb = fc.subarray([...CODES]).map((codes) => [...codes].sort())

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  blacklisted: fc.boolean(),
  state: fc.constantFrom<Model.License["state"]>("pending", "issued", "suspended", "revoked", "terminated"),
  expired: fc.boolean(),
  maxActivations: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null, freq: 4 }),
  strategy: fc.constantFrom<Model.OverageStrategy>("deny", "allow_1_25x", "allow_1_5x", "allow_2x"),
  others: fc.integer({ min: 0, max: 9 }),
  dead: fc.integer({ min: 0, max: 3 }),
  fingerprint: fc.option(fc.constant("fp-target"), { nil: null, freq: 4 }),
  own: fc.constantFrom<Own>("none", "holding", "dead", "inactive", "revoked"),
  ownCodes: codesArb,
  policyCodes: fc.option(codesArb, { nil: undefined }),
  required: fc.option(fc.subarray([...CODES], { minLength: 1 }), { nil: undefined, freq: 2 })
})

const NOW = T0 + 30 * DAY
const INTERVAL = 600

/** Builds the license and the machines validation reads for a scenario (heartbeats required: 2 × 600 s). */
const build = (s: Scenario): { license: Model.License; machines: ReadonlyArray<Model.Machine> } => {
  const license = makeLicense({
    state: s.state,
    expiresAt: s.expired ? NOW - DAY - 1 : NOW + DAY,
    graceDays: 1,
    maxActivations: s.maxActivations,
    overageStrategy: s.strategy,
    requireHeartbeat: true,
    heartbeatInterval: INTERVAL,
    entitlements: s.ownCodes
  })
  const alive = { activatedAt: T0, lastHeartbeatAt: NOW - 2 * INTERVAL * SECOND + 1 }
  const deadTiming = { activatedAt: T0, lastHeartbeatAt: NOW - 2 * INTERVAL * SECOND }
  const machines: Array<Model.Machine> = []
  for (let i = 0; i < s.others; i++) machines.push(makeMachine({ fingerprint: `other-${i}`, ...alive }))
  for (let i = 0; i < s.dead; i++) machines.push(makeMachine({ fingerprint: `dead-${i}`, ...deadTiming }))
  const own = (patch: Partial<Model.Machine>) => makeMachine({ fingerprint: "fp-target", ...patch })
  switch (s.own) {
    case "holding":
      machines.push(own(alive))
      break
    case "dead":
      machines.push(own(deadTiming))
      break
    case "inactive":
      machines.push(own({ ...alive, status: "inactive", deactivationReason: "client" }))
      break
    case "revoked":
      machines.push(own({ ...alive, status: "revoked", deactivationReason: "admin" }))
      break
    case "none":
      break
  }
  return { license, machines }
}

/** The contract's answer for a scenario, computed without the domain. */
const expected = (s: Scenario) => {
  const held = s.others + (s.own === "holding" ? 1 : 0)
  const ceiling = s.maxActivations === null ? null : Math.floor(s.maxActivations * FACTOR[s.strategy])
  const free = ceiling === null || held < ceiling
  const holds = new Set([...s.ownCodes, ...(s.policyCodes ?? [])])
  const missing = (s.required ?? []).filter((code) => !holds.has(code))
  const code = (() => {
    if (s.blacklisted) return "blacklisted"
    if (s.state === "terminated") return "license_terminated"
    if (s.state === "revoked") return "license_revoked"
    if (s.state === "suspended") return "license_suspended"
    if (s.state === "pending") return "license_pending"
    if (s.expired) return "license_expired"
    if (missing.length > 0) return "entitlements_missing"
    if (ceiling !== null && held > ceiling) return "machine_limit_exceeded"
    if (s.fingerprint === null) return "valid"
    if (s.own === "revoked") return "machine_revoked"
    if (s.own !== "holding") return "fingerprint_not_activated"
    return "valid"
  })()
  return {
    code,
    held,
    ceiling,
    needsActivation: code === "fingerprint_not_activated" && free,
    missing: code === "entitlements_missing" ? missing : [],
    entitlements: [...holds].sort()
  }
}

describe("effective entitlements", () => {
  it("a license's codes follow its policy's as they change: each answer is the union of the lists given then", () => {
    // One license's own list (the same array, as the validation cache hands it out) with its policy's codes
    // changing (a new array each time), changing back, and the own list replaced: never an earlier union.
    const listArb = codesArb.map((codes) => [...codes])
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(2), fc.nat(3)), { minLength: 1, maxLength: 12 }), fc.array(listArb, { minLength: 3, maxLength: 3 }), fc.array(listArb, { minLength: 4, maxLength: 4 }), (steps, owns, policies) => {
        for (const [o, p] of steps) {
          const own = owns[o]!
          const policy = policies[p]!
          expect(Entitlements.effectiveEntitlements(own, policy)).toEqual([...new Set([...own, ...policy])].sort())
        }
      })
    )
  })

  it("missing codes are named in the order asked, each time it is asked", () => {
    const held = ["export", "sync", "team"]
    expect(Entitlements.missingEntitlements(held, ["zeta", "export", "alpha"])).toEqual(["zeta", "alpha"])
    expect(Entitlements.missingEntitlements(held, ["sync", "team"])).toEqual([])
    expect(Entitlements.missingEntitlements([], ["sync"])).toEqual(["sync"])
    expect(Entitlements.missingEntitlements(["sync"], ["sync", "export"])).toEqual(["export"])
  })
})

describe("validateLicense", () => {
  it("checks the codes in the contract's order", () => {
    expect(Validation.validationCodes).toEqual(ORDER)
  })

  it("answers the first failing check of the contract's order, whatever else fails", () => {
    const seen = new Set<string>()
    const needs = new Set<boolean>()
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { license, machines } = build(s)
        const result = Validation.validateLicense({
          license,
          machines,
          fingerprint: s.fingerprint,
          now: NOW,
          blacklisted: s.blacklisted,
          entitlements: Entitlements.effectiveEntitlements(license.entitlements, s.policyCodes),
          required: s.required
        })
        const want = expected(s)
        expect(result.code).toBe(want.code)
        expect(result.missing).toEqual(want.missing)
        expect(result.entitlements).toEqual(want.entitlements)
        expect(result.valid).toBe(want.code === "valid")
        expect(result.seatsHeld).toBe(want.held)
        expect(result.ceiling).toBe(want.ceiling)
        expect(result.needsActivation).toBe(want.needsActivation)
        if (want.code === "valid" && s.fingerprint !== null) {
          expect(result.machine?.fingerprint).toBe("fp-target")
        } else {
          expect(result.machine).toBeNull()
        }
        seen.add(want.code)
        if (want.code === "fingerprint_not_activated") needs.add(want.needsActivation)
      }),
      { numRuns: 6000 }
    )
    expect([...seen].sort()).toEqual([...ORDER].sort())
    expect([...needs].sort()).toEqual([false, true])
  })

  it("answers machine_limit_exceeded above the ceiling even for one of its active machines", () => {
    const license = makeLicense({ maxActivations: 2 })
    const machines = [makeMachine({ fingerprint: "a" }), makeMachine({ fingerprint: "b" }), makeMachine({ fingerprint: "c" })]
    const result = Validation.validateLicense({ license, machines, fingerprint: "a", now: T0, blacklisted: false })
    expect(result).toMatchObject({ valid: false, code: "machine_limit_exceeded", seatsHeld: 3, ceiling: 2, machine: null, status: "active" })
    // At the ceiling it is valid.
    expect(Validation.validateLicense({ license, machines: machines.slice(0, 2), fingerprint: "a", now: T0, blacklisted: false }).code).toBe("valid")
  })

  it("needs_activation is true for an unknown fingerprint only while a seat is free", () => {
    const license = makeLicense({ maxActivations: 1 })
    const one = [makeMachine({ fingerprint: "a" })]
    expect(Validation.validateLicense({ license, machines: [], fingerprint: "x", now: T0, blacklisted: false })).toMatchObject({ code: "fingerprint_not_activated", needsActivation: true })
    expect(Validation.validateLicense({ license, machines: one, fingerprint: "x", now: T0, blacklisted: false })).toMatchObject({ code: "fingerprint_not_activated", needsActivation: false })
    expect(Validation.validateLicense({ license, machines: one, fingerprint: "a", now: T0, blacklisted: false })).toMatchObject({ code: "valid", needsActivation: false })
  })

  it("reports the status as it is now", () => {
    const license = makeLicense({ expiresAt: T0 })
    expect(Validation.validateLicense({ license, machines: [], fingerprint: null, now: T0, blacklisted: false })).toMatchObject({ code: "valid", status: "inactive" })
    expect(Validation.validateLicense({ license, machines: [makeMachine()], fingerprint: null, now: T0, blacklisted: false }).status).toBe("active")
    expect(Validation.validateLicense({ license, machines: [], fingerprint: null, now: T0 + 1, blacklisted: false })).toMatchObject({ code: "license_expired", status: "expired" })
    expect(Validation.validateLicense({ license: { ...license, state: "suspended" }, machines: [], fingerprint: null, now: T0, blacklisted: false }).status).toBe("suspended")
  })
})
