/**
 * The seat-change planner (`applySeatChanges`), pure: the one place activate, deactivate and heartbeat are
 * decided, for a call alone (a batch of one) and for a group commit. Calls are applied in order with the state
 * carried forward; each gets its own answer; the writes and events come out in call order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { Model } from "@lm/domain"
import { type Answer, applySeatChanges, type SeatChange } from "../src/licensing/seatChanges.js"
import { DAY, makeLicense, makeMachine, T0 } from "./fixtures.js"

const KEY = "AAAA-BBBB-CCCC-DDDD"
const activate = (fingerprint: string, extra: Partial<Extract<SeatChange, { _tag: "Activate" }>["facts"]> = {}): SeatChange => ({
  _tag: "Activate",
  key: KEY,
  facts: { fingerprint, ...extra },
  blacklisted: false
})

/** What each answer says: `ok <fingerprint> <machine id>` or the error's code. */
const said = (answers: ReadonlyArray<Answer>) =>
  answers.map((a) => (Result.isSuccess(a) ? `ok ${a.success.machine.fingerprint} ${a.success.machine.id}` : a.failure.code))

describe("applySeatChanges", () => {
  it("carries seats from call to call: the first activation takes the last seat, the second is refused", () => {
    const license = makeLicense({ maxActivations: 2, validForDays: 30 })
    const held = makeMachine({ licenseId: license.id, fingerprint: "held" })
    const plan = applySeatChanges([activate("a"), activate("b"), activate("held")], [license], [held], T0 + DAY)

    // The first activation starts relative validity: the license is written once, in its final state.
    expect(plan.licenses).toHaveLength(1)
    expect(plan.licenses[0]).toMatchObject({ activatedAt: T0 + DAY, expiresAt: T0 + 31 * DAY, revision: license.revision + 1 })
    expect(plan.writes.inserts.map((d) => d.fingerprint)).toEqual(["a"])
    expect(plan.writes.updates).toEqual([])
    expect(plan.writes.events.map((e) => [e.event.type, e.insertIndex])).toEqual([["machine.activated", 0]])

    const inserted: Model.Machine = { ...makeMachine({ licenseId: license.id, fingerprint: "a" }), id: 77 }
    const answers = plan.answers({ inserted: [inserted], updated: [] })
    expect(said(answers)).toEqual(["ok a 77", "machine_limit_exceeded", `ok held ${held.id}`])
    expect(answers.map((a) => Result.isSuccess(a) && "created" in a.success ? a.success.created : null)).toEqual([true, null, false])
  })

  it("answers license_not_found for a key no locked license has, and machine_not_found for an unknown machine", () => {
    const license = makeLicense()
    const elsewhere = makeMachine({ licenseId: 2, fingerprint: "elsewhere" })
    const changes: Array<SeatChange> = [
      { ...activate("x"), key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" },
      { _tag: "Deactivate", key: KEY, fingerprint: "nobody" },
      { _tag: "Deactivate", key: KEY, machineId: elsewhere.id },
      { _tag: "Heartbeat", key: KEY, fingerprint: "nobody", appVersion: undefined, blacklisted: false }
    ]
    const plan = applySeatChanges(changes, [license], [elsewhere], T0)
    expect(said(plan.answers({ inserted: [], updated: [] }))).toEqual([
      "license_not_found",
      "machine_not_found",
      "machine_not_found",
      "machine_not_found"
    ])
    expect(plan.writes).toEqual({ inserts: [], updates: [], events: [] })
    expect(plan.licenses).toEqual([])
  })

  it("deactivates by machine id or fingerprint once: a repeat is answered without a write or an event", () => {
    const license = makeLicense()
    const machine = makeMachine({ licenseId: license.id, fingerprint: "leaving" })
    const plan = applySeatChanges(
      [{ _tag: "Deactivate", key: KEY, machineId: machine.id }, { _tag: "Deactivate", key: KEY, fingerprint: "leaving" }],
      [license],
      [machine],
      T0 + 5
    )
    expect(plan.writes.updates.map((m) => [m.id, m.status, m.deactivationReason])).toEqual([[machine.id, "inactive", "client"]])
    expect(plan.writes.events.map((e) => e.event.type)).toEqual(["machine.deactivated"])
    const saved = { ...plan.writes.updates[0]!, name: "as stored" }
    const answers = plan.answers({ inserted: [], updated: [saved] })
    // The written call answers the machine as the store saved it; the repeat the state carried forward.
    expect(answers.map((a) => Result.isSuccess(a) && [a.success.machine.status, a.success.machine.name])).toEqual([
      ["inactive", "as stored"],
      ["inactive", null]
    ])
  })

  it("a reactivation carries the components the client sent, for the row-by-row write", () => {
    const license = makeLicense()
    const old = makeMachine({ licenseId: license.id, fingerprint: "back", status: "inactive", deactivatedAt: T0 })
    const components = [{ kind: "cpu" as const, fingerprint: "cpu-1", name: null }]
    const plan = applySeatChanges([activate("back", { components }), activate("fresh", { components })], [license], [old], T0 + 10)
    expect(plan.writes.updates.map((m) => [m.id, m.status])).toEqual([[old.id, "active"]])
    expect(plan.components).toEqual([components])
    expect(plan.writes.inserts.map((d) => [d.fingerprint, d.components])).toEqual([["fresh", components]])
  })

  it("a heartbeat renews a floating lease and answers the next deadline; refusals come from the license", () => {
    const license = makeLicense({ isFloating: true, leaseDuration: 60 })
    const machine = makeMachine({ licenseId: license.id, fingerprint: "beating", leaseExpiresAt: T0 + 60_000 })
    const beat: SeatChange = { _tag: "Heartbeat", key: KEY, fingerprint: "beating", appVersion: "2.0", blacklisted: false }
    const plan = applySeatChanges([beat], [license], [machine], T0 + 30_000)
    expect(plan.writes.updates.map((m) => [m.leaseExpiresAt, m.appVersion])).toEqual([[T0 + 90_000, "2.0"]])
    const [answer] = plan.answers({ inserted: [], updated: plan.writes.updates })
    expect(Result.isSuccess(answer!) && "nextHeartbeatBefore" in answer.success ? answer.success.leaseExpiresAt : null).toBe(T0 + 90_000)

    const refused = applySeatChanges([{ ...beat, blacklisted: true }], [license], [machine], T0 + 30_000)
    expect(said(refused.answers({ inserted: [], updated: [] }))).toEqual(["blacklisted"])
    expect(refused.writes.updates).toEqual([])
  })
})
