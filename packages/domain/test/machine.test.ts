/**
 * Seats (CONTRACT §3, §4, §7, §14): who holds a seat at an instant (floating leases, heartbeat death), activation
 * plans, heartbeats without resurrection, deactivation, revocation and the sweep's verdict.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Machine, Model } from "@lm/domain"
import { DAY, failureOf, makeLicense, makeMachine, SECOND, successOf, T0 } from "./fixtures.js"

const durationArb = fc.integer({ min: 1, max: 31_536_000 })

/** Activates a new fingerprint at `now` through the domain's plan and returns the machine it would insert. */
const activate = (license: Model.License, now: number, active: ReadonlyArray<Model.Machine> = [], fingerprint = "fp-new"): Model.Machine => {
  const plan = successOf(Machine.planActivation({ license, activeMachines: active, existing: undefined, facts: { fingerprint }, now, blacklisted: false }))
  if (plan._tag !== "Insert") throw new Error(`expected an insert, got ${plan._tag}`)
  return { ...plan.draft, id: 99, components: [] }
}

const beat = (license: Model.License, machine: Model.Machine, now: number) =>
  successOf(Machine.recordHeartbeat({ license, machine, appVersion: undefined, now, blacklisted: false }))

describe("holdsSeat", () => {
  it("a node-locked machine without heartbeats holds its seat until it is deactivated", () => {
    const license = makeLicense()
    const machine = activate(license, T0)
    expect(machine.leaseExpiresAt).toBeNull()
    expect(machine.seatDeadline).toBeNull()
    expect(Machine.holdsSeat(machine, license, T0 + 10_000 * DAY)).toBe(true)
    expect(Machine.holdsSeat({ ...machine, status: "inactive" }, license, T0)).toBe(false)
    expect(Machine.holdsSeat({ ...machine, status: "revoked" }, license, T0)).toBe(false)
  })

  it("a floating lease holds until lease_duration after activation, and not at that instant", () => {
    fc.assert(
      fc.property(durationArb, fc.integer({ min: 0, max: 100 * DAY }), (lease, at) => {
        const license = makeLicense({ isFloating: true, leaseDuration: lease })
        const machine = activate(license, T0 + at)
        const end = T0 + at + lease * SECOND
        expect(machine.leaseExpiresAt).toBe(end)
        expect(machine.seatDeadline).toBe(end)
        expect(Machine.holdsSeat(machine, license, end - 1)).toBe(true)
        expect(Machine.holdsSeat(machine, license, end)).toBe(false)
      })
    )
  })

  it("a heartbeat renews the lease to now + lease_duration", () => {
    fc.assert(
      fc.property(durationArb, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (lease, fraction) => {
        const license = makeLicense({ isFloating: true, leaseDuration: lease })
        const machine = activate(license, T0)
        const at = T0 + Math.floor(fraction * lease * SECOND)
        const result = beat(license, machine, at)
        expect(result.leaseExpiresAt).toBe(at + lease * SECOND)
        expect(result.machine.leaseExpiresAt).toBe(at + lease * SECOND)
        expect(result.machine.lastHeartbeatAt).toBe(at)
        expect(Machine.holdsSeat(result.machine, license, at + lease * SECOND - 1)).toBe(true)
        expect(Machine.holdsSeat(result.machine, license, at + lease * SECOND)).toBe(false)
      })
    )
  })

  it("a required heartbeat dies 2 × interval after activation, then 2 × interval after the last beat", () => {
    fc.assert(
      fc.property(
        durationArb,
        fc.array(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { minLength: 1, maxLength: 5 }),
        (interval, gaps) => {
          const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: interval })
          const window = 2 * interval * SECOND
          let machine = activate(license, T0)
          let from = T0
          expect(Machine.holdsSeat(machine, license, from + window - 1)).toBe(true)
          expect(Machine.holdsSeat(machine, license, from + window)).toBe(false)
          for (const gap of gaps) {
            const at = from + Math.floor(gap * window)
            machine = beat(license, machine, at).machine
            from = at
            expect(machine.seatDeadline).toBe(from + window)
            expect(Machine.holdsSeat(machine, license, from + window - 1)).toBe(true)
            expect(Machine.holdsSeat(machine, license, from + window)).toBe(false)
          }
        }
      )
    )
  })

  it("a beat later than the first deadline still counts from that beat (the window moves with each beat)", () => {
    const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
    let machine = activate(license, T0)
    machine = beat(license, machine, T0 + 100 * SECOND).machine
    // 2 × 60 s after activation has passed, but only 20 s since the beat.
    expect(Machine.holdsSeat(machine, license, T0 + 120 * SECOND)).toBe(true)
    expect(Machine.holdsSeat(machine, license, T0 + 220 * SECOND - 1)).toBe(true)
    expect(Machine.holdsSeat(machine, license, T0 + 220 * SECOND)).toBe(false)
  })

  it("a floating machine that must also heartbeat holds until the earlier of both deadlines", () => {
    fc.assert(
      fc.property(durationArb, durationArb, (lease, interval) => {
        const license = makeLicense({ isFloating: true, leaseDuration: lease, requireHeartbeat: true, heartbeatInterval: interval })
        const machine = activate(license, T0)
        const end = T0 + Math.min(lease, 2 * interval) * SECOND
        expect(Machine.seatDeadline(machine, license)).toBe(end)
        expect(Machine.holdsSeat(machine, license, end - 1)).toBe(true)
        expect(Machine.holdsSeat(machine, license, end)).toBe(false)
      })
    )
  })

  it("counts only machines that hold a seat", () => {
    const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
    const live = makeMachine({ activatedAt: T0 })
    const dead = makeMachine({ activatedAt: T0 - 120 * SECOND })
    const inactive = makeMachine({ status: "inactive" })
    const revoked = makeMachine({ status: "revoked" })
    expect(Machine.countSeatsHeld([live, dead, inactive, revoked], license, T0)).toBe(1)
  })
})

describe("holdsSeatByDeadline (how stores find seat holders)", () => {
  it("answers as holdsSeat for a machine stored with the deadline the domain writes, at and around it", () => {
    const rulesArb = fc.record({
      isFloating: fc.boolean(),
      leaseDuration: durationArb,
      requireHeartbeat: fc.boolean(),
      heartbeatInterval: fc.integer({ min: 1, max: 86_400 })
    })
    const statusArb = fc.constantFrom<Model.MachineStatus>("active", "inactive", "revoked")
    const offsetArb = fc.integer({ min: 0, max: 100 * DAY })
    fc.assert(
      fc.property(rulesArb, statusArb, offsetArb, fc.option(offsetArb, { nil: null }), fc.option(offsetArb, { nil: null }), offsetArb, (rules, status, activated, beat, lease, asked) => {
        const license = makeLicense(rules)
        const timing = { activatedAt: T0 + activated, lastHeartbeatAt: beat === null ? null : T0 + beat, leaseExpiresAt: lease === null ? null : T0 + lease }
        const deadline = Machine.seatDeadline(timing, license)
        const machine = makeMachine({ ...timing, status, seatDeadline: status === "active" ? deadline : null })
        for (const at of [T0 + asked, ...(deadline === null ? [] : [deadline - 1, deadline, deadline + 1])]) {
          expect(Machine.holdsSeatByDeadline(machine, at)).toBe(Machine.holdsSeat(machine, license, at))
        }
      })
    )
  })
})

describe("planActivation", () => {
  const strategyLicense = makeLicense({ maxActivations: 2, overageStrategy: "allow_1_5x" })

  it("takes a seat while one is free under the ceiling and refuses with the numbers once none is", () => {
    // ceiling = floor(2 × 1.5) = 3
    const held = [makeMachine(), makeMachine(), makeMachine()]
    expect(activate(strategyLicense, T0, held.slice(0, 2)).status).toBe("active")
    const error = failureOf(Machine.planActivation({ license: strategyLicense, activeMachines: held, existing: undefined, facts: { fingerprint: "x" }, now: T0, blacklisted: false }))
    expect(error).toMatchObject({ _tag: "MachineLimitExceeded", max_activations: 2, activation_count: 3, ceiling: 3, status: 422, code: "machine_limit_exceeded" })
  })

  it("never counts a dead machine towards the ceiling, swept or not", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 5 }), durationArb, (max, deadCount, lease) => {
        const license = makeLicense({ maxActivations: max, isFloating: true, leaseDuration: lease })
        const now = T0 + lease * SECOND
        // `max - 1` machines hold a lease; `deadCount` others are still `active` but their lease ran out at `now`.
        const live = Array.from({ length: max - 1 }, () => makeMachine({ activatedAt: T0 + 1, leaseExpiresAt: now + 1 }))
        const dead = Array.from({ length: deadCount }, () => makeMachine({ activatedAt: T0, leaseExpiresAt: now }))
        expect(Machine.countSeatsHeld([...live, ...dead], license, now)).toBe(max - 1)
        expect(activate(license, now, [...live, ...dead]).status).toBe("active")
        const full = [...live, makeMachine({ activatedAt: T0 + 1, leaseExpiresAt: now + 1 }), ...dead]
        expect(failureOf(Machine.planActivation({ license, activeMachines: full, existing: undefined, facts: { fingerprint: "x" }, now, blacklisted: false }))._tag).toBe(
          "MachineLimitExceeded"
        )
      })
    )
  })

  it("is idempotent for a fingerprint that holds a seat, even when the license is full", () => {
    const license = makeLicense({ maxActivations: 1 })
    const machine = makeMachine({ fingerprint: "fp-a" })
    const plan = successOf(Machine.planActivation({ license, activeMachines: [machine], existing: machine, facts: { fingerprint: "fp-a" }, now: T0, blacklisted: false }))
    expect(plan).toEqual({ _tag: "AlreadyActive", machine })
  })

  it("re-activates an earlier record of the fingerprint with fresh timing", () => {
    const license = makeLicense({ isFloating: true, leaseDuration: 60, activatedAt: T0 - DAY })
    const old = makeMachine({ fingerprint: "fp-a", status: "inactive", activatedAt: T0 - DAY, deactivatedAt: T0 - 1, deactivationReason: "client", lastHeartbeatAt: T0 - 2, name: "old" })
    const plan = successOf(Machine.planActivation({ license, activeMachines: [], existing: old, facts: { fingerprint: "fp-a", name: "new" }, now: T0, blacklisted: false }))
    expect(plan._tag).toBe("Reactivate")
    if (plan._tag !== "Reactivate") return
    expect(plan.machine).toMatchObject({
      id: old.id,
      name: "new",
      status: "active",
      activatedAt: T0,
      deactivatedAt: null,
      deactivationReason: null,
      lastHeartbeatAt: null,
      leaseExpiresAt: T0 + 60 * SECOND,
      seatDeadline: T0 + 60 * SECOND
    })
  })

  it("re-activates a machine whose heartbeat died without waiting for the sweep", () => {
    const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60, maxActivations: 1 })
    const dead = makeMachine({ fingerprint: "fp-a", activatedAt: T0 - 120 * SECOND })
    const plan = successOf(Machine.planActivation({ license, activeMachines: [dead], existing: dead, facts: { fingerprint: "fp-a" }, now: T0, blacklisted: false }))
    expect(plan._tag).toBe("Reactivate")
  })

  it("refuses a revoked fingerprint for good, even with seats free", () => {
    const license = makeLicense()
    const revoked = makeMachine({ fingerprint: "fp-a", status: "revoked" })
    const error = failureOf(Machine.planActivation({ license, activeMachines: [], existing: revoked, facts: { fingerprint: "fp-a" }, now: T0, blacklisted: false }))
    expect(error).toMatchObject({ _tag: "Refused", code: "machine_revoked", status: 403 })
  })

  it("refuses in the contract's order: license standing before the machine and before the seat check", () => {
    const full = makeLicense({ maxActivations: 0, state: "suspended" })
    const revoked = makeMachine({ fingerprint: "fp-a", status: "revoked" })
    const plan = (license: Model.License, blacklisted = false) =>
      failureOf(Machine.planActivation({ license, activeMachines: [], existing: revoked, facts: { fingerprint: "fp-a" }, now: T0, blacklisted }))
    expect(plan(full, true)).toMatchObject({ code: "blacklisted" })
    expect(plan({ ...full, state: "terminated" })).toMatchObject({ code: "license_terminated" })
    expect(plan({ ...full, state: "revoked" })).toMatchObject({ code: "license_revoked" })
    expect(plan(full)).toMatchObject({ code: "license_suspended" })
    expect(plan({ ...full, state: "pending" })).toMatchObject({ code: "license_pending" })
    expect(plan({ ...full, state: "issued", expiresAt: T0 - 1 })).toMatchObject({ code: "license_expired" })
    expect(plan({ ...full, state: "issued" })).toMatchObject({ code: "machine_revoked" })
    const error = failureOf(Machine.planActivation({ license: { ...full, state: "issued" }, activeMachines: [], existing: undefined, facts: { fingerprint: "fp-b" }, now: T0, blacklisted: false }))
    expect(error._tag).toBe("MachineLimitExceeded")
  })

  it("the first activation sets activated_at and starts relative validity; later ones leave the license alone", () => {
    const license = makeLicense({ validForDays: 30 })
    const first = successOf(Machine.planActivation({ license, activeMachines: [], existing: undefined, facts: { fingerprint: "a" }, now: T0 + 5, blacklisted: false }))
    expect(first._tag).toBe("Insert")
    if (first._tag !== "Insert") return
    expect(first.license.activatedAt).toBe(T0 + 5)
    expect(first.license.expiresAt).toBe(T0 + 5 + 30 * DAY)
    const second = successOf(Machine.planActivation({ license: first.license, activeMachines: [], existing: undefined, facts: { fingerprint: "b" }, now: T0 + DAY, blacklisted: false }))
    if (second._tag !== "Insert") throw new Error("expected an insert")
    expect(second.license).toBe(first.license)
  })
})

describe("recordHeartbeat", () => {
  it("refuses a machine that no longer holds a seat with machine_inactive: no resurrection", () => {
    const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
    const machine = activate(license, T0)
    const late = failureOf(Machine.recordHeartbeat({ license, machine, appVersion: undefined, now: T0 + 120 * SECOND, blacklisted: false }))
    expect(late).toMatchObject({ _tag: "MachineInactive", code: "machine_inactive", status: 409 })
    const deactivated = Machine.deactivateMachine(license, machine, "client", T0).machine
    expect(failureOf(Machine.recordHeartbeat({ license, machine: deactivated, appVersion: undefined, now: T0 + 1, blacklisted: false }))._tag).toBe("MachineInactive")
  })

  it("refuses an expired floating lease too", () => {
    const license = makeLicense({ isFloating: true, leaseDuration: 30 })
    const machine = activate(license, T0)
    expect(failureOf(Machine.recordHeartbeat({ license, machine, appVersion: undefined, now: T0 + 30 * SECOND, blacklisted: false }))._tag).toBe("MachineInactive")
  })

  it("refuses a revoked machine with machine_revoked, and the license's refusals come first", () => {
    const license = makeLicense()
    const revoked = Machine.revokeMachine(license, activate(license, T0), T0).machine
    expect(failureOf(Machine.recordHeartbeat({ license, machine: revoked, appVersion: undefined, now: T0, blacklisted: false }))).toMatchObject({ code: "machine_revoked" })
    expect(failureOf(Machine.recordHeartbeat({ license: { ...license, state: "suspended" }, machine: revoked, appVersion: undefined, now: T0, blacklisted: false }))).toMatchObject({
      code: "license_suspended"
    })
    expect(failureOf(Machine.recordHeartbeat({ license, machine: revoked, appVersion: undefined, now: T0, blacklisted: true }))).toMatchObject({ code: "blacklisted" })
  })

  it("tells a floating client to beat before its lease ends, and records the app version", () => {
    const license = makeLicense({ isFloating: true, leaseDuration: 120, heartbeatInterval: 600 })
    const result = successOf(Machine.recordHeartbeat({ license, machine: activate(license, T0), appVersion: "2.0.0", now: T0 + SECOND, blacklisted: false }))
    expect(result.nextHeartbeatBefore).toBe(T0 + SECOND + 120 * SECOND)
    expect(result.machine.appVersion).toBe("2.0.0")
    const locked = makeLicense({ heartbeatInterval: 600 })
    const plain = successOf(Machine.recordHeartbeat({ license: locked, machine: activate(locked, T0), appVersion: undefined, now: T0, blacklisted: false }))
    expect(plain.nextHeartbeatBefore).toBe(T0 + 600 * SECOND)
    expect(plain.leaseExpiresAt).toBeNull()
  })
})

describe("deactivate and revoke", () => {
  it("deactivation frees the seat with its reason and the matching event", () => {
    const license = makeLicense()
    const machine = activate(license, T0)
    const cases = [
      ["client", "machine.deactivated"],
      ["admin", "machine.deactivated"],
      ["license_terminated", "machine.deactivated"],
      ["heartbeat_dead", "machine.culled"],
      ["lease_expired", "machine.lease_expired"]
    ] as const
    for (const [reason, type] of cases) {
      const change = Machine.deactivateMachine(license, machine, reason, T0 + 9)
      expect(change.machine).toMatchObject({ status: "inactive", deactivatedAt: T0 + 9, deactivationReason: reason, seatDeadline: null })
      expect(change.events.map((e) => [e.type, e.data["reason"]])).toEqual([[type, reason]])
      expect(Machine.holdsSeat(change.machine, license, T0 + 9)).toBe(false)
    }
  })

  it("deactivating a machine that is not active changes nothing", () => {
    const license = makeLicense()
    for (const status of ["inactive", "revoked"] as const) {
      const machine = makeMachine({ status, deactivationReason: "client" })
      expect(Machine.deactivateMachine(license, machine, "admin", T0)).toEqual({ machine, events: [], changed: false })
    }
  })

  it("revoking frees the seat, once", () => {
    const license = makeLicense()
    const change = Machine.revokeMachine(license, activate(license, T0), T0 + 3)
    expect(change.machine).toMatchObject({ status: "revoked", deactivatedAt: T0 + 3, deactivationReason: "admin" })
    expect(change.events.map((e) => e.type)).toEqual(["machine.revoked"])
    expect(Machine.revokeMachine(license, change.machine, T0 + 4)).toEqual({ machine: change.machine, events: [], changed: false })
  })
})

describe("sweepReason", () => {
  it("lease_expired for a floating lease that ran out, heartbeat_dead for a dead heartbeat, null while the seat is held", () => {
    const floating = makeLicense({ isFloating: true, leaseDuration: 60 })
    const leased = activate(floating, T0)
    expect(Machine.sweepReason(leased, floating, T0 + 60 * SECOND - 1)).toBeNull()
    expect(Machine.sweepReason(leased, floating, T0 + 60 * SECOND)).toBe("lease_expired")
    const beating = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
    const locked = activate(beating, T0)
    expect(Machine.sweepReason(locked, beating, T0 + 120 * SECOND - 1)).toBeNull()
    expect(Machine.sweepReason(locked, beating, T0 + 120 * SECOND)).toBe("heartbeat_dead")
    // Both rules: the heartbeat (2 × 20 s) dies before the lease (60 s).
    const both = makeLicense({ isFloating: true, leaseDuration: 60, requireHeartbeat: true, heartbeatInterval: 20 })
    expect(Machine.sweepReason(activate(both, T0), both, T0 + 40 * SECOND)).toBe("heartbeat_dead")
    expect(Machine.sweepReason(makeMachine({ status: "inactive" }), beating, T0 + DAY)).toBeNull()
  })
})

describe("viewLicense", () => {
  it("reports the derived status and counts only machines that hold a seat now", () => {
    const license = makeLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
    const alive = makeMachine({ lastHeartbeatAt: T0 + 100 * SECOND })
    const dead = makeMachine({ lastHeartbeatAt: T0 })
    const off = makeMachine({ status: "inactive" })
    const now = T0 + 150 * SECOND
    expect(Machine.viewLicense(license, [alive, dead, off], now)).toEqual({ license, status: "active", activationCount: 1 })
    expect(Machine.viewLicense(license, [dead, off], now)).toEqual({ license, status: "inactive", activationCount: 0 })
  })

  it("reports a state set by an action or an expiry before seats", () => {
    const holder = makeMachine()
    const suspended = makeLicense({ state: "suspended" })
    expect(Machine.viewLicense(suspended, [holder], T0)).toEqual({ license: suspended, status: "suspended", activationCount: 1 })
    const expired = makeLicense({ expiresAt: T0 - DAY })
    expect(Machine.viewLicense(expired, [holder], T0)).toEqual({ license: expired, status: "expired", activationCount: 1 })
  })
})
