/**
 * License management and the sweep (CONTRACT §3, §7, §14) through the services on the memory store: actions
 * and their events, terminate deactivating every machine, and the sweep deactivating dead machines with their
 * reasons and events.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Licenses, Licensing, Ports, Services, Sweeper } from "@lm/domain"
import { onEngine } from "./engine.js"
import { DAY, SECOND, T0 } from "./fixtures.js"

const client = { ipAddress: null }

const newLicense = (input: Services.CreateLicenseInput = {}) => Licenses.use((l) => l.create(input)).pipe(Effect.map((view) => view.license.key))
const activate = (licenseKey: string, fingerprint: string) => Licensing.use((l) => l.activate({ ...client, licenseKey, facts: { fingerprint } }))
const heartbeat = (licenseKey: string, fingerprint: string) => Licensing.use((l) => l.heartbeat({ ...client, licenseKey, fingerprint }))
const view = (key: string) => Licenses.use((l) => l.get(key))
const sweep = Sweeper.use((s) => s.sweepOnce)
const eventsAfter = (id: number) => Ports.EventOutbox.use((o) => o.readAfter(id, 1000))
const lastEventId = Effect.map(eventsAfter(0), (events) => events.at(-1)?.id ?? 0)

describe("actions", () => {
  it.effect("suspend, revoke, reinstate and terminate write their events; repeats write none", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const key = yield* newLicense()
      yield* activate(key, "a")
      const since = yield* lastEventId
      expect((yield* licenses.suspend(key)).status).toBe("suspended")
      expect((yield* licenses.suspend(key)).status).toBe("suspended")
      expect((yield* licenses.revoke(key)).status).toBe("revoked")
      expect((yield* licenses.revoke(key)).status).toBe("revoked")
      const back = yield* licenses.reinstate(key)
      expect(back).toMatchObject({ status: "active", activationCount: 1 })
      const error = yield* Effect.flip(licenses.reinstate(key))
      expect(error).toMatchObject({ _tag: "InvalidTransition", from: "active", action: "reinstate", status: 409 })
      const types = (yield* eventsAfter(since)).map((e) => e.type)
      expect(types).toEqual(["license.suspended", "license.revoked", "license.reinstated"])
    })))

  it.effect("a license switched to floating gives its machines a lease from then; they do not hold seats for ever", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 1, leaseDuration: 600 })
      yield* activate(key, "fp-1")
      yield* TestClock.adjust(3600 * SECOND)
      yield* Licenses.use((l) => l.update(key, { isFloating: true }))
      expect((yield* view(key)).machines[0]?.leaseExpiresAt).toBe(T0 + 3600 * SECOND + 600 * SECOND)
      yield* TestClock.adjust(599 * SECOND)
      expect((yield* view(key)).activationCount).toBe(1)
      yield* TestClock.adjust(1 * SECOND)
      expect((yield* view(key)).activationCount).toBe(0)
      // The freed seat can be taken by another machine.
      expect((yield* activate(key, "fp-2")).created).toBe(true)
    })))

  it.effect("reinstate lands on inactive or expired by seats and the clock", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const idle = yield* newLicense()
      yield* licenses.revoke(idle)
      expect((yield* licenses.reinstate(idle)).status).toBe("inactive")
      const ending = yield* newLicense({ expiresAt: T0 + DAY, graceDays: 1 })
      yield* licenses.suspend(ending)
      yield* TestClock.adjust(2 * DAY)
      expect((yield* licenses.reinstate(ending)).status).toBe("inactive") // exactly at expires_at + grace: not yet
      yield* licenses.suspend(ending)
      yield* TestClock.adjust(1)
      expect((yield* licenses.reinstate(ending)).status).toBe("expired")
    })))

  it.effect("terminate needs confirm, deactivates every machine with reason license_terminated, and is final", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const key = yield* newLicense({ requireHeartbeat: true, heartbeatInterval: 30 })
      yield* activate(key, "a")
      yield* activate(key, "b")
      yield* TestClock.adjust("10 minutes") // both heartbeats died, but neither was swept: still `active` records
      yield* activate(key, "c")
      expect(yield* Effect.flip(licenses.terminate(key, false))).toMatchObject({ _tag: "ConfirmationRequired", status: 400 })
      const since = yield* lastEventId
      const done = yield* licenses.terminate(key, true)
      expect(done).toMatchObject({ status: "terminated", activationCount: 0 })
      const detail = yield* view(key)
      expect(detail.machines.map((m) => [m.fingerprint, m.status, m.deactivationReason])).toEqual([
        ["a", "inactive", "license_terminated"],
        ["b", "inactive", "license_terminated"],
        ["c", "inactive", "license_terminated"]
      ])
      const events = yield* eventsAfter(since)
      expect(events.map((e) => e.type)).toEqual(["license.terminated", "machine.deactivated", "machine.deactivated", "machine.deactivated"])
      // A repeat is a no-op; every other write is license_terminated; the sweep finds nothing left.
      expect((yield* licenses.terminate(key, true)).status).toBe("terminated")
      for (const write of [licenses.suspend(key), licenses.revoke(key), licenses.reinstate(key), licenses.update(key, { maxActivations: 1 }), licenses.renew(key, { _tag: "ExtendDays", days: 1 })] as ReadonlyArray<Effect.Effect<unknown, unknown>>) {
        expect(yield* Effect.flip(write)).toMatchObject({ _tag: "LicenseTerminated", code: "license_terminated", status: 409 })
      }
      expect(yield* Effect.flip(activate(key, "d"))).toMatchObject({ _tag: "Refused", code: "license_terminated" })
      expect(yield* sweep).toBe(0)
      expect((yield* eventsAfter(since)).length).toBe(4)
      expect(yield* licenses.delete(key)).toEqual({ id: detail.license.id })
    })))

  it.effect("renew by days counts from the later of now and the expiry; from now when perpetual", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const future = yield* newLicense({ expiresAt: T0 + 10 * DAY })
      expect((yield* licenses.renew(future, { _tag: "ExtendDays", days: 5 })).license.expiresAt).toBe(T0 + 15 * DAY)
      const past = yield* newLicense({ expiresAt: T0 - 10 * DAY })
      expect((yield* licenses.renew(past, { _tag: "ExtendDays", days: 5 })).license.expiresAt).toBe(T0 + 5 * DAY)
      const perpetual = yield* newLicense()
      yield* TestClock.adjust(DAY)
      expect((yield* licenses.renew(perpetual, { _tag: "ExtendDays", days: 5 })).license.expiresAt).toBe(T0 + 6 * DAY)
      expect(yield* Effect.flip(licenses.renew(perpetual, { _tag: "ResetRelative" }))).toMatchObject({ _tag: "InvalidParam" })
      const relative = yield* newLicense({ validForDays: 30 })
      expect((yield* licenses.renew(relative, { _tag: "ResetRelative" })).license.expiresAt).toBe(T0 + DAY + 30 * DAY)
    })))
})

describe("Sweeper", () => {
  it.effect("deactivates machines whose lease ran out (lease_expired) or whose heartbeat died (heartbeat_dead), with events", () =>
    onEngine(Effect.gen(function*() {
      const floating = yield* newLicense({ isFloating: true, leaseDuration: 60 })
      const beating = yield* newLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
      const locked = yield* newLicense()
      yield* activate(floating, "lease-1")
      yield* activate(floating, "lease-2")
      yield* activate(beating, "beat-1")
      yield* activate(beating, "beat-2")
      yield* activate(locked, "locked")
      yield* TestClock.adjust("59 seconds")
      yield* heartbeat(floating, "lease-2") // lease now ends at 119 s
      yield* heartbeat(beating, "beat-2") // dies at 59 + 120 = 179 s
      expect(yield* sweep).toBe(0)
      const since = yield* lastEventId

      yield* TestClock.adjust("61 seconds") // 120 s: lease-1 ran out (60 s), lease-2 too (119 s); beat-1 died at 120 s
      expect(yield* sweep).toBe(3)
      const machinesOf = (key: string) => Effect.map(view(key), (d) => d.machines.map((m) => [m.fingerprint, m.status, m.deactivationReason, m.deactivatedAt]))
      expect(yield* machinesOf(floating)).toEqual([
        ["lease-1", "inactive", "lease_expired", T0 + 120 * SECOND],
        ["lease-2", "inactive", "lease_expired", T0 + 120 * SECOND]
      ])
      expect(yield* machinesOf(beating)).toEqual([
        ["beat-1", "inactive", "heartbeat_dead", T0 + 120 * SECOND],
        ["beat-2", "active", null, null]
      ])
      expect(yield* machinesOf(locked)).toEqual([["locked", "active", null, null]])
      const events = yield* eventsAfter(since)
      expect(events.map((e) => [e.type, e.data["fingerprint"], e.data["reason"]]).sort()).toEqual([
        ["machine.culled", "beat-1", "heartbeat_dead"],
        ["machine.lease_expired", "lease-1", "lease_expired"],
        ["machine.lease_expired", "lease-2", "lease_expired"]
      ])
      expect(yield* sweep).toBe(0)

      yield* TestClock.adjust("59 seconds") // 179 s
      expect(yield* sweep).toBe(1)
      expect((yield* view(beating)).machines[1]).toMatchObject({ status: "inactive", deactivationReason: "heartbeat_dead" })
      expect((yield* view(locked)).activationCount).toBe(1)
    })))

  it.effect("leaves a machine alone when the license's seat rules changed after its deadline was stored", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ requireHeartbeat: true, heartbeatInterval: 60 })
      yield* activate(key, "a")
      yield* (yield* Licenses).update(key, { requireHeartbeat: false })
      yield* TestClock.adjust("1 day")
      expect(yield* sweep).toBe(0)
      expect((yield* view(key)).activationCount).toBe(1)
    })))

  it.effect("sweeps more machines than one batch holds", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ isFloating: true, leaseDuration: 10 })
      for (let i = 0; i < 450; i++) yield* activate(key, `m-${i}`)
      yield* TestClock.adjust("10 seconds")
      expect(yield* sweep).toBe(450)
      expect((yield* eventsAfter(0)).filter((e) => e.type === "machine.lease_expired")).toHaveLength(450)
    })))
})
