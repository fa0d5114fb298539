/**
 * The client calls (CONTRACT §4, §7, §14) through the services on the memory store: activation idempotency and
 * re-activation, revoked fingerprints, deactivation reasons, heartbeats that renew leases, no resurrection of a
 * dead machine, the first activation starting relative validity, and the signed answers (CONTRACT §5).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Licenses, Licensing, Machines, Ports, Services, Signer } from "@lm/domain"
import { onEngine } from "./engine.js"
import { DAY, SECOND, T0 } from "./fixtures.js"

const client = { ipAddress: "203.0.113.7" }

const newLicense = (input: Services.CreateLicenseInput = {}) => Licenses.use((l) => l.create(input)).pipe(Effect.map((view) => view.license.key))

const activate = (licenseKey: string, fingerprint: string) =>
  Licensing.use((l) => l.activate({ ...client, licenseKey, facts: { fingerprint } }))

const heartbeat = (licenseKey: string, fingerprint: string) =>
  Licensing.use((l) => l.heartbeat({ ...client, licenseKey, fingerprint }))

const deactivate = (licenseKey: string, fingerprint: string) =>
  Licensing.use((l) => l.deactivate({ ...client, licenseKey, fingerprint }))

const validate = (licenseKey: string, fingerprint: string | null) =>
  Licensing.use((l) => l.validate({ ...client, licenseKey, fingerprint })).pipe(Effect.map((r) => r.validation))

const view = (key: string) => Licenses.use((l) => l.get(key))

const events = Ports.EventOutbox.use((o) => o.readAfter(0, 1000))

describe("activation", () => {
  it.effect("is idempotent: the same fingerprint answers 200 with the same machine and takes no new seat", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 1 })
      const first = yield* activate(key, "fp-a")
      expect(first.created).toBe(true)
      expect(first.machine).toMatchObject({ fingerprint: "fp-a", status: "active", activatedAt: T0, ipAddress: "203.0.113.7" })
      yield* TestClock.adjust("1 hour")
      const again = yield* activate(key, "fp-a")
      expect(again.created).toBe(false)
      expect(again.machine.id).toBe(first.machine.id)
      expect(again.machine.activatedAt).toBe(T0)
      const detail = yield* view(key)
      expect(detail.activationCount).toBe(1)
      expect(detail.machines).toHaveLength(1)
      expect((yield* events).filter((e) => e.type === "machine.activated")).toHaveLength(1)
    })))

  it.effect("re-activates an inactive record of the fingerprint as a new seat (201) on the same machine", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 1 })
      const first = yield* activate(key, "fp-a")
      const off = yield* deactivate(key, "fp-a")
      expect(off.machine).toMatchObject({ status: "inactive", deactivationReason: "client", deactivatedAt: T0 })
      yield* TestClock.adjust("10 minutes")
      const again = yield* activate(key, "fp-a")
      expect(again.created).toBe(true)
      expect(again.machine).toMatchObject({ id: first.machine.id, status: "active", activatedAt: T0 + 600 * SECOND, deactivatedAt: null, deactivationReason: null })
      expect((yield* view(key)).machines).toHaveLength(1)
    })))

  it.effect("refuses a revoked fingerprint for good, even with seats free", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      const { machine } = yield* activate(key, "fp-a")
      const machines = yield* Machines
      const revoked = yield* machines.revoke(machine.id)
      expect(revoked.status).toBe("revoked")
      const error = yield* Effect.flip(activate(key, "fp-a"))
      expect(error).toMatchObject({ _tag: "Refused", code: "machine_revoked" })
      expect((yield* validate(key, "fp-a")).code).toBe("machine_revoked")
      expect((yield* activate(key, "fp-b")).created).toBe(true)
    })))

  it.effect("refuses beyond the ceiling with the numbers (422)", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 2, overageStrategy: "allow_1_5x" })
      for (const fp of ["a", "b", "c"]) yield* activate(key, fp)
      const error = yield* Effect.flip(activate(key, "d"))
      expect(error).toMatchObject({ _tag: "MachineLimitExceeded", max_activations: 2, activation_count: 3, ceiling: 3, status: 422 })
      // A freed seat can be taken again.
      yield* deactivate(key, "a")
      expect((yield* activate(key, "d")).created).toBe(true)
    })))

  it.effect("starts relative validity at the first activation only, and keeps activated_at", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ validForDays: 30 })
      expect((yield* view(key)).license).toMatchObject({ activatedAt: null, expiresAt: null })
      yield* TestClock.adjust("2 days")
      yield* activate(key, "a")
      const started = (yield* view(key)).license
      expect(started).toMatchObject({ activatedAt: T0 + 2 * DAY, expiresAt: T0 + 32 * DAY })
      yield* TestClock.adjust("3 days")
      yield* activate(key, "b")
      expect((yield* view(key)).license).toMatchObject({ activatedAt: T0 + 2 * DAY, expiresAt: T0 + 32 * DAY })
      // Expired after the 30 days (no grace): refused and reported as such.
      yield* TestClock.adjust("28 days")
      expect((yield* Effect.flip(activate(key, "c")))).toMatchObject({ _tag: "Refused", code: "license_expired" })
      expect((yield* view(key)).status).toBe("expired")
    })))

  it.effect("refuses on a suspended license and on an unknown key", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      yield* (yield* Licenses).suspend(key)
      expect(yield* Effect.flip(activate(key, "a"))).toMatchObject({ _tag: "Refused", code: "license_suspended", status: 403 })
      expect(yield* Effect.flip(activate("ZZZZ-ZZZZ-ZZZZ-ZZZZ", "a"))).toMatchObject({ _tag: "LicenseNotFound", status: 404 })
      expect(yield* Effect.flip(activate("not a key", "a"))).toMatchObject({ _tag: "InvalidParam", status: 400 })
    })))

  it.effect("accepts the key in any case and with spaces around it", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      const result = yield* activate(`  ${key.toLowerCase()} `, "a")
      expect(result.license.key).toBe(key)
    })))
})

describe("deactivation", () => {
  it.effect("by the client frees the seat with reason client; by an admin with reason admin; a repeat is the same 200", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 2 })
      yield* activate(key, "a")
      const b = yield* activate(key, "b")
      const off = yield* deactivate(key, "a")
      expect(off.machine.deactivationReason).toBe("client")
      const repeat = yield* deactivate(key, "a")
      expect(repeat.machine).toEqual(off.machine)
      const admin = yield* (yield* Machines).deactivate(b.machine.id)
      expect(admin).toMatchObject({ status: "inactive", deactivationReason: "admin" })
      expect((yield* view(key)).activationCount).toBe(0)
      const deactivated = (yield* events).filter((e) => e.type === "machine.deactivated")
      expect(deactivated.map((e) => e.data["reason"])).toEqual(["client", "admin"])
    })))

  it.effect("of a fingerprint or machine not on that license is machine_not_found", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      const other = yield* newLicense()
      const { machine } = yield* activate(other, "a")
      expect(yield* Effect.flip(deactivate(key, "a"))).toMatchObject({ _tag: "MachineNotFound", status: 404 })
      const licensing = yield* Licensing
      expect(yield* Effect.flip(licensing.deactivate({ ...client, licenseKey: key, machineId: machine.id }))).toMatchObject({ _tag: "MachineNotFound" })
      const byId = yield* licensing.deactivate({ ...client, licenseKey: other, machineId: machine.id })
      expect(byId.machine.status).toBe("inactive")
    })))
})

describe("heartbeat", () => {
  it.effect("renews a floating lease to now + lease_duration, keeping the seat past the first lease", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ isFloating: true, leaseDuration: 60, maxActivations: 1 })
      const { machine } = yield* activate(key, "a")
      expect(machine.leaseExpiresAt).toBe(T0 + 60 * SECOND)
      yield* TestClock.adjust("50 seconds")
      const beat = yield* heartbeat(key, "a")
      expect(beat.leaseExpiresAt).toBe(T0 + 110 * SECOND)
      expect(beat.machine).toMatchObject({ lastHeartbeatAt: T0 + 50 * SECOND, leaseExpiresAt: T0 + 110 * SECOND })
      expect(beat.nextHeartbeatBefore).toBeLessThanOrEqual(T0 + 110 * SECOND)
      yield* TestClock.adjust("59 seconds") // T0 + 109 s: past the first lease, inside the renewed one
      expect(yield* validate(key, "a")).toMatchObject({ code: "valid" })
      expect(yield* Effect.flip(activate(key, "b"))).toMatchObject({ _tag: "MachineLimitExceeded" })
      yield* TestClock.adjust("1 second") // T0 + 110 s: the lease has run out, the seat is free without a sweep
      expect(yield* validate(key, "a")).toMatchObject({ code: "fingerprint_not_activated", needsActivation: true })
      expect((yield* activate(key, "b")).created).toBe(true)
    })))

  it.effect("of a machine whose lease ran out is machine_inactive, and does not bring it back", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ isFloating: true, leaseDuration: 60 })
      yield* activate(key, "a")
      yield* TestClock.adjust("60 seconds")
      expect(yield* Effect.flip(heartbeat(key, "a"))).toMatchObject({ _tag: "MachineInactive", code: "machine_inactive", status: 409 })
      const detail = yield* view(key)
      expect(detail.activationCount).toBe(0)
      expect(detail.machines[0]).toMatchObject({ leaseExpiresAt: T0 + 60 * SECOND, lastHeartbeatAt: null })
      expect((yield* validate(key, "a")).code).toBe("fingerprint_not_activated")
    })))

  it.effect("of a machine whose required heartbeat died (2 × interval) is machine_inactive, swept or not", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ requireHeartbeat: true, heartbeatInterval: 30 })
      yield* activate(key, "a")
      yield* TestClock.adjust("59 seconds")
      yield* heartbeat(key, "a")
      yield* TestClock.adjust("60 seconds") // 60 s after the beat at 59 s
      expect(yield* Effect.flip(heartbeat(key, "a"))).toMatchObject({ _tag: "MachineInactive" })
      // A deactivated machine is refused the same way.
      yield* activate(key, "b")
      yield* deactivate(key, "b")
      expect(yield* Effect.flip(heartbeat(key, "b"))).toMatchObject({ _tag: "MachineInactive" })
    })))

  it.effect("of a fingerprint never activated on the license is machine_not_found", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      const other = yield* newLicense()
      yield* activate(other, "a")
      expect(yield* Effect.flip(heartbeat(key, "a"))).toMatchObject({ _tag: "MachineNotFound", code: "machine_not_found", status: 404 })
    })))

  it.effect("of a revoked machine is machine_revoked; on a suspended license the license's code", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense()
      const { machine } = yield* activate(key, "a")
      yield* activate(key, "b")
      yield* (yield* Machines).revoke(machine.id)
      expect(yield* Effect.flip(heartbeat(key, "a"))).toMatchObject({ _tag: "Refused", code: "machine_revoked" })
      yield* (yield* Licenses).suspend(key)
      expect(yield* Effect.flip(heartbeat(key, "b"))).toMatchObject({ _tag: "Refused", code: "license_suspended" })
    })))
})

describe("validate", () => {
  it.effect("answers machine_limit_exceeded for an active machine once the limit is lowered below the count", () =>
    onEngine(Effect.gen(function*() {
      const key = yield* newLicense({ maxActivations: 3 })
      for (const fp of ["a", "b", "c"]) yield* activate(key, fp)
      yield* (yield* Licenses).update(key, { maxActivations: 2 })
      // Lowering the limit keeps the machines; new activations are refused, validation reports the overage.
      expect((yield* view(key)).activationCount).toBe(3)
      expect(yield* validate(key, "a")).toMatchObject({ code: "machine_limit_exceeded", valid: false })
      expect(yield* Effect.flip(activate(key, "d"))).toMatchObject({ _tag: "MachineLimitExceeded" })
    })))
})

describe("signed answers (CONTRACT §5): an embedder gets them from the domain, as the server sends them", () => {
  it.effect("validate signs a license token for a valid answer, and a refusal token (no license token) for a refusal", () =>
    onEngine(Effect.gen(function*() {
      const signer = yield* Signer
      const key = yield* newLicense({ maxActivations: 2 })
      yield* activate(key, "fp-a")
      const valid = yield* Licensing.use((l) => l.validate({ ...client, licenseKey: key, fingerprint: "fp-a", nonce: "n-1" }))
      expect(valid.signedRefusal).toBeNull()
      expect(yield* signer.verifyToken(valid.signedPayload!, { type: "license" })).toMatchObject({
        ok: true,
        payload: { key, lid: valid.license.id, valid: true, code: "valid", status: "active", fp: "fp-a", nonce: "n-1", iat: T0 / 1000 }
      })
      const refused = yield* Licensing.use((l) => l.validate({ ...client, licenseKey: key, fingerprint: "fp-other", nonce: 7 }))
      expect(refused.signedPayload).toBeNull()
      expect(yield* signer.verifyToken(refused.signedRefusal!, { type: "refusal" })).toMatchObject({
        ok: true,
        payload: { key, lid: refused.license.id, code: "fingerprint_not_activated", fp: "fp-other", nonce: 7 }
      })
    })))

  it.effect("activate and heartbeat answer the machine's signed certificate, issued now", () =>
    onEngine(Effect.gen(function*() {
      const signer = yield* Signer
      const key = yield* newLicense()
      const activated = yield* activate(key, "fp-a")
      expect(yield* signer.verifyToken(activated.certificate, { type: "machine" })).toMatchObject({
        ok: true,
        payload: { key, lid: activated.license.id, mid: activated.machine.id, fp: "fp-a", iat: T0 / 1000 }
      })
      yield* TestClock.adjust("1 hour")
      const beat = yield* heartbeat(key, "fp-a")
      expect(yield* signer.verifyToken(beat.certificate, { type: "machine" })).toMatchObject({
        ok: true,
        payload: { key, mid: activated.machine.id, fp: "fp-a", iat: T0 / 1000 + 3600 }
      })
    })))
})
