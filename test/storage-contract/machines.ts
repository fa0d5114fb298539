/** The storage contract of MachineRepository: machines and their components, seat-change batches, the sweep's claims. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect, Exit, Ref } from "effect"
import { DAY, event, fullMachineDraft, keyOf, licenseDraft, machineDraft, MINUTE, T0 } from "./fixtures.js"
import { type ContractTest, isPositiveInt, seatEvent } from "./support.js"

export const machineCases = (test: ContractTest): void => {
  describe("machines", () => {
    test("insert and find round-trip every field; components get ids", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const license = yield* licenses.insert(licenseDraft())
        const draft = fullMachineDraft(license.id)
        const machine = yield* machines.insert(draft)
        assert.isTrue(isPositiveInt(machine.id))
        assert.strictEqual(machine.components.length, 2)
        for (const component of machine.components) assert.isTrue(isPositiveInt(component.id))
        assert.notStrictEqual(machine.components[0]!.id, machine.components[1]!.id)
        assert.deepStrictEqual(machine, {
          ...draft,
          id: machine.id,
          components: draft.components.map((c, i) => ({ ...c, id: machine.components[i]!.id }))
        })
        assert.deepStrictEqual(yield* machines.findById(machine.id), machine)
        assert.deepStrictEqual(yield* machines.findByFingerprint(license.id, draft.fingerprint), machine)

        const bare = machineDraft(license.id, "fp-bare")
        const plain = yield* machines.insert(bare)
        assert.deepStrictEqual(plain, { ...bare, id: plain.id, components: [] })
        assert.deepStrictEqual(yield* machines.findByFingerprint(license.id, "fp-bare"), plain)
        assert.isUndefined(yield* machines.findByFingerprint(license.id, "fp-unknown"))
        assert.isUndefined(yield* machines.findByFingerprint(license.id + 1000, "fp-bare"))
        assert.isUndefined(yield* machines.findById(999_999))
      }))

    test("update writes every field; components are replaced only when given", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const license = yield* licenses.insert(licenseDraft())
        const machine = yield* machines.insert(fullMachineDraft(license.id))
        const changed = {
          ...machine,
          name: null,
          hostname: "renamed",
          status: "active" as const,
          deactivatedAt: null,
          deactivationReason: null,
          lastHeartbeatAt: T0 + 99,
          leaseExpiresAt: null,
          seatDeadline: null,
          meta: { moved: true }
        }
        const kept = yield* machines.update(changed)
        assert.deepStrictEqual(kept, changed)
        assert.deepStrictEqual(yield* machines.findById(machine.id), changed)

        const replaced = yield* machines.update(changed, [{ kind: "mac", fingerprint: "aa:bb", name: "eth0" }])
        assert.strictEqual(replaced.components.length, 1)
        assert.deepStrictEqual({ ...replaced.components[0]!, id: 0 }, { id: 0, kind: "mac", fingerprint: "aa:bb", name: "eth0" })
        assert.isTrue(isPositiveInt(replaced.components[0]!.id))
        assert.deepStrictEqual(yield* machines.findById(machine.id), replaced)

        const emptied = yield* machines.update(replaced, [])
        assert.deepStrictEqual(emptied.components, [])
        assert.deepStrictEqual((yield* machines.findById(machine.id))?.components, [])
      }))

    test("writeSeatChanges inserts, updates and appends events in one go; events of inserted machines get their ids", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const outbox = yield* Ports.EventOutbox
        const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
        const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        assert.deepStrictEqual(yield* machines.writeSeatChanges({ inserts: [], updates: [], events: [] }), [])
        const old = yield* machines.insert(fullMachineDraft(a.id))
        const seqBefore = yield* outbox.revocationSeq
        const drafts = [machineDraft(b.id, "w-1", { meta: { k: "v" } }), machineDraft(a.id, "w-2", { leaseExpiresAt: T0 + DAY, seatDeadline: T0 + DAY })]
        const changedOld = { ...old, status: "inactive" as const, deactivatedAt: T0 + 1, deactivationReason: "client" as const, seatDeadline: null }
        const inserted = yield* store.transaction(machines.writeSeatChanges({
          inserts: drafts,
          updates: [changedOld],
          events: [
            { event: seatEvent("machine.activated", b.id, 0, "w-1"), insertIndex: 0 },
            { event: seatEvent("machine.deactivated", a.id, old.id, old.fingerprint) },
            { event: seatEvent("machine.activated", a.id, 0, "w-2"), insertIndex: 1 }
          ]
        }))
        assert.strictEqual(inserted.length, 2)
        inserted.forEach((machine, i) => assert.deepStrictEqual(machine, { ...drafts[i]!, id: machine.id, components: [] }))
        for (const machine of inserted) assert.deepStrictEqual(yield* machines.findById(machine.id), machine)
        assert.deepStrictEqual(yield* machines.findById(old.id), changedOld)
        const written = yield* outbox.readAfter(0, 100)
        assert.deepStrictEqual(written.map((e) => [e.type, e.licenseId, e.machineId, e.data.fingerprint]), [
          ["machine.activated", b.id, inserted[0]!.id, "w-1"],
          ["machine.deactivated", a.id, old.id, old.fingerprint],
          ["machine.activated", a.id, inserted[1]!.id, "w-2"]
        ])
        assert.isTrue(written[0]!.id < written[1]!.id && written[1]!.id < written[2]!.id)
        assert.strictEqual(yield* outbox.revocationSeq, seqBefore)
        // A revoking event advances the revocation sequence, as append does.
        yield* store.transaction(machines.writeSeatChanges({
          inserts: [],
          updates: [],
          events: [{ event: seatEvent("machine.revoked", a.id, old.id, old.fingerprint) }]
        }))
        assert.strictEqual(yield* outbox.revocationSeq, seqBefore + 1)
        // A duplicate (license, fingerprint) fails the whole write: nothing of it stays.
        const failed = yield* Effect.exit(store.transaction(machines.writeSeatChanges({
          inserts: [machineDraft(a.id, "w-3"), machineDraft(a.id, "w-2")],
          updates: [{ ...changedOld, name: "should not stay" }],
          events: [{ event: seatEvent("machine.activated", a.id, 0, "w-3"), insertIndex: 0 }]
        })))
        assert.isTrue(Exit.isFailure(failed))
        assert.isUndefined(yield* machines.findByFingerprint(a.id, "w-3"))
        assert.deepStrictEqual(yield* machines.findById(old.id), changedOld)
        assert.strictEqual((yield* outbox.readAfter(0, 100)).length, 4)
      }))

    test("listForSeatChanges: the active machines of each license named plus each named fingerprint's record, once each, in id order", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
        const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        const c = yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
        const a1 = yield* machines.insert(fullMachineDraft(a.id))
        const a2 = yield* machines.insert(machineDraft(a.id, "a-off", { status: "inactive", deactivatedAt: T0, deactivationReason: "client" }))
        const a3 = yield* machines.insert(machineDraft(a.id, "a-revoked", { status: "revoked" }))
        const b1 = yield* machines.insert(machineDraft(b.id, "b-on"))
        const b2 = yield* machines.insert(machineDraft(b.id, "b-off", { status: "inactive" }))
        yield* machines.insert(machineDraft(c.id, "c-on"))
        assert.deepStrictEqual(yield* machines.listForSeatChanges([]), [])
        const found = yield* machines.listForSeatChanges([
          { licenseId: a.id, fingerprint: "a-off" },
          { licenseId: a.id, fingerprint: a1.fingerprint },
          { licenseId: a.id, fingerprint: "unknown" },
          { licenseId: b.id, fingerprint: "b-off" },
          { licenseId: b.id, fingerprint: "a-revoked" }
        ])
        assert.deepStrictEqual(found, [a1, a2, b1, b2])
        assert.isFalse(found.some((m) => m.id === a3.id))
        assert.deepStrictEqual(found[0]!.components, a1.components)
      }))

    test("a fingerprint is unique per license, not across licenses", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
        const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        const first = yield* machines.insert(machineDraft(a.id, "fp-1", { name: "first" }))
        const duplicate = yield* Effect.exit(machines.insert(machineDraft(a.id, "fp-1", { name: "second" })))
        assert.isTrue(Exit.isFailure(duplicate))
        assert.deepStrictEqual(yield* machines.findByFingerprint(a.id, "fp-1"), first)
        assert.strictEqual((yield* machines.list(a.id, { page: 1, perPage: 10 })).total, 1)
        const elsewhere = yield* machines.insert(machineDraft(b.id, "fp-1"))
        assert.strictEqual(elsewhere.licenseId, b.id)
      }))

    test("listActive, listActiveOf, listOf, listForValidation, list and listRevoked select by status", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
        const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        const c = yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
        const a1 = yield* machines.insert(machineDraft(a.id, "a1"))
        const a2 = yield* machines.insert(machineDraft(a.id, "a2", { status: "inactive", deactivatedAt: T0, deactivationReason: "client" }))
        const a3 = yield* machines.insert(machineDraft(a.id, "a3", { status: "revoked", deactivatedAt: T0, deactivationReason: "admin" }))
        const a4 = yield* machines.insert(machineDraft(a.id, "a4", { seatDeadline: T0 - 1 }))
        const b1 = yield* machines.insert(machineDraft(b.id, "b1"))
        const c1 = yield* machines.insert(machineDraft(c.id, "c1"))
        const ids = (ms: ReadonlyArray<{ readonly id: number }>) => ms.map((m) => m.id).sort((x, y) => x - y)

        // Active status, whether or not the seat is still held.
        assert.deepStrictEqual(ids(yield* machines.listActive(a.id)), [a1.id, a4.id])
        assert.deepStrictEqual(yield* machines.listActive(a.id + 1000), [])
        assert.deepStrictEqual(ids(yield* machines.listActiveOf([a.id, b.id])), [a1.id, a4.id, b1.id])
        assert.deepStrictEqual(yield* machines.listActiveOf([]), [])
        // Every status, for the export; in id order.
        assert.deepStrictEqual((yield* machines.listOf([b.id, a.id])).map((m) => m.id), [a1.id, a2.id, a3.id, a4.id, b1.id])
        assert.deepStrictEqual(yield* machines.listOf([]), [])
        assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, null)), [a1.id, a4.id])
        assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "a3")), [a1.id, a3.id, a4.id])
        assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "a1")), [a1.id, a4.id])
        assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "nope")), [a1.id, a4.id])

        const all = yield* machines.list(a.id, { page: 1, perPage: 10 })
        assert.deepStrictEqual({ ids: ids(all.items), total: all.total }, { ids: [a1.id, a2.id, a3.id, a4.id], total: 4 })
        const inactive = yield* machines.list(a.id, { page: 1, perPage: 10, status: "inactive" })
        assert.deepStrictEqual({ ids: ids(inactive.items), total: inactive.total }, { ids: [a2.id], total: 1 })
        const paged = yield* machines.list(a.id, { page: 2, perPage: 3 })
        assert.strictEqual(paged.total, 4)
        assert.strictEqual(paged.items.length, 1)
        assert.deepStrictEqual(yield* machines.listRevoked, [{ id: a3.id, fingerprint: "a3" }])
        assert.deepStrictEqual(ids(yield* machines.listActive(c.id)), [c1.id])
      }))

    test("claimExpired claims active machines whose deadline is at or before now, up to the limit", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const license = yield* licenses.insert(licenseDraft())
        const due1 = yield* machines.insert(machineDraft(license.id, "due-1", { seatDeadline: T0 - 2 * MINUTE }))
        const due2 = yield* machines.insert(machineDraft(license.id, "due-2", { seatDeadline: T0 }))
        yield* machines.insert(machineDraft(license.id, "later", { seatDeadline: T0 + 1 }))
        yield* machines.insert(machineDraft(license.id, "never", { seatDeadline: null }))
        yield* machines.insert(
          machineDraft(license.id, "off", { status: "inactive", seatDeadline: T0 - MINUTE, deactivatedAt: T0, deactivationReason: "client" })
        )
        const claimed = yield* store.transaction(machines.claimExpired(T0, 10))
        assert.deepStrictEqual(claimed.map((m) => m.id).sort((a, b) => a - b), [due1.id, due2.id])
        const one = yield* store.transaction(machines.claimExpired(T0, 1))
        assert.strictEqual(one.length, 1)
        assert.deepStrictEqual(yield* store.transaction(machines.claimExpired(T0 - 3 * MINUTE, 10)), [])
      }))

    test("claimExpired never hands the same machine to two concurrent transactions", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const license = yield* licenses.insert(licenseDraft())
        yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) =>
          machines.insert(machineDraft(license.id, `due-${i}`, { seatDeadline: T0 - i })))
        const seen = yield* Ref.make<ReadonlyArray<number>>([])
        const sweep = store.transaction(
          Effect.gen(function*() {
            const claimed = yield* machines.claimExpired(T0, 10)
            yield* Effect.yieldNow
            for (const machine of claimed) {
              yield* machines.update({ ...machine, status: "inactive", deactivatedAt: T0, deactivationReason: "heartbeat_dead", seatDeadline: null })
            }
            yield* Ref.update(seen, (ids) => [...ids, ...claimed.map((m) => m.id)])
          })
        )
        yield* Effect.all(Array.from({ length: 10 }, () => sweep), { concurrency: "unbounded" })
        const ids = yield* Ref.get(seen)
        assert.strictEqual(new Set(ids).size, ids.length, "a machine was claimed twice")
        assert.strictEqual(ids.length, 50)
        assert.deepStrictEqual(yield* store.transaction(machines.claimExpired(T0, 10)), [])
        assert.deepStrictEqual(yield* machines.listActive(license.id), [])
      }))
  })
}
