/** The storage contract of Store: transactions (commit, rollback, savepoints) and ping. */
import { assert, describe } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import { activity, event, keyOf, licenseDraft, machineDraft } from "./fixtures.js"
import { Boom, type ContractTest, failureOf } from "./support.js"

export const storeCases = (test: ContractTest): void => {
  describe("store", () => {
    test("ping answers", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        yield* store.ping
      }))
  })

  describe("transactions", () => {
    /** Writes through several ports; returns the license written. */
    const writeEverything = Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const machines = yield* Ports.MachineRepository
      const outbox = yield* Ports.EventOutbox
      const log = yield* Ports.ActivityLog
      const existing = (yield* licenses.findByKey(keyOf(1)))!
      yield* licenses.update({ ...existing, userId: 999, revision: existing.revision + 1 })
      const created = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
      yield* machines.insert(machineDraft(existing.id, "fp-new"))
      yield* outbox.append([event("license.revoked", 1, existing.id)])
      yield* log.record([activity(existing.id)])
      return created
    })

    /** Checks that nothing `writeEverything` did is visible. */
    const assertUntouched = (original: Model.License, seq: number) =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const outbox = yield* Ports.EventOutbox
        const log = yield* Ports.ActivityLog
        assert.deepStrictEqual(yield* licenses.findByKey(keyOf(1)), original)
        assert.isUndefined(yield* licenses.findByKey(keyOf(2)))
        assert.isUndefined(yield* machines.findByFingerprint(original.id, "fp-new"))
        assert.deepStrictEqual(yield* outbox.readAfter(0, 10), [])
        assert.strictEqual(yield* outbox.revocationSeq, seq)
        assert.strictEqual(yield* log.count({}), 0)
        // The key can be taken again: the rolled-back insert left nothing behind.
        yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
      })

    const setup = Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const outbox = yield* Ports.EventOutbox
      const original = yield* licenses.insert(licenseDraft({ key: keyOf(1), userId: 1 }))
      return { original, seq: yield* outbox.revocationSeq }
    })

    test("a successful transaction commits every write", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const outbox = yield* Ports.EventOutbox
        const log = yield* Ports.ActivityLog
        const { original, seq } = yield* setup
        yield* store.transaction(writeEverything)
        assert.strictEqual((yield* licenses.findByKey(keyOf(1)))?.userId, 999)
        assert.isDefined(yield* licenses.findByKey(keyOf(2)))
        assert.isDefined(yield* (yield* Ports.MachineRepository).findByFingerprint(original.id, "fp-new"))
        assert.strictEqual((yield* outbox.readAfter(0, 10)).length, 1)
        assert.isTrue((yield* outbox.revocationSeq) > seq)
        assert.strictEqual(yield* log.count({}), 1)
      }))

    test("a typed failure rolls back every write", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const { original, seq } = yield* setup
        const error = yield* failureOf(store.transaction(Effect.andThen(writeEverything, Effect.fail(new Boom()))))
        assert.instanceOf(error, Boom)
        yield* assertUntouched(original, seq)
      }))

    test("a defect rolls back every write", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const { original, seq } = yield* setup
        const exit = yield* Effect.exit(store.transaction(Effect.andThen(writeEverything, Effect.die("kaput"))))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
        yield* assertUntouched(original, seq)
      }))

    test("a failed insert (LicenseExists) inside a transaction rolls back the writes before it", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const { original, seq } = yield* setup
        const error = yield* failureOf(store.transaction(Effect.andThen(writeEverything, licenses.insert(licenseDraft({ key: keyOf(1) })))))
        assert.strictEqual(error._tag, "LicenseExists")
        yield* assertUntouched(original, seq)
      }))

    test("an interrupted transaction rolls back every write", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const { original, seq } = yield* setup
        const wrote = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          store.transaction(Effect.andThen(writeEverything, Effect.andThen(Deferred.succeed(wrote, undefined), Effect.never)))
        )
        yield* Deferred.await(wrote)
        yield* Fiber.interrupt(fiber)
        yield* assertUntouched(original, seq)
      }))

    test("a nested transaction joins the outer one: it commits with it and rolls back with it", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const { original, seq } = yield* setup
        yield* store.transaction(Effect.andThen(store.transaction(writeEverything), licenses.insert(licenseDraft({ key: keyOf(3) }))))
        assert.isDefined(yield* licenses.findByKey(keyOf(2)))
        assert.isDefined(yield* licenses.findByKey(keyOf(3)))

        const inner = store.transaction(
          Effect.gen(function*() {
            const license = (yield* licenses.findByKey(keyOf(1)))!
            yield* licenses.update({ ...license, userId: 5, revision: license.revision + 1 })
            yield* licenses.insert(licenseDraft({ key: keyOf(4) }))
          })
        )
        const error = yield* failureOf(store.transaction(Effect.andThen(inner, Effect.fail(new Boom()))))
        assert.instanceOf(error, Boom)
        assert.strictEqual((yield* licenses.findByKey(keyOf(1)))?.userId, 999)
        assert.isUndefined(yield* licenses.findByKey(keyOf(4)))
        assert.isTrue((yield* (yield* Ports.EventOutbox).revocationSeq) > seq)
        assert.strictEqual(original.userId, 1)
      }))

    test("a failed nested transaction undoes its own writes; the outer one goes on and commits", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        yield* setup
        const outcome = yield* store.transaction(
          Effect.gen(function*() {
            yield* licenses.insert(licenseDraft({ key: keyOf(5) }))
            const inner = yield* Effect.flip(
              store.transaction(Effect.andThen(licenses.insert(licenseDraft({ key: keyOf(6) })), Effect.fail(new Boom())))
            )
            assert.isUndefined(yield* licenses.findByKey(keyOf(6)))
            yield* licenses.insert(licenseDraft({ key: keyOf(7) }))
            return inner
          })
        )
        assert.instanceOf(outcome, Boom)
        assert.isDefined(yield* licenses.findByKey(keyOf(5)))
        assert.isUndefined(yield* licenses.findByKey(keyOf(6)))
        assert.isDefined(yield* licenses.findByKey(keyOf(7)))
      }))

    test("a transaction reads its own writes", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        yield* store.transaction(
          Effect.gen(function*() {
            const license = yield* licenses.insert(licenseDraft({ key: keyOf(8), productId: 42 }))
            assert.deepStrictEqual(yield* licenses.findByKey(keyOf(8)), license)
            const machine = yield* machines.insert(machineDraft(license.id, "own"))
            assert.deepStrictEqual(yield* machines.listActive(license.id), [machine])
            const page = yield* licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc", productId: 42 })
            assert.deepStrictEqual(page, { items: [license], total: 1 })
            yield* licenses.delete(license.id)
            assert.isUndefined(yield* licenses.findByKey(keyOf(8)))
            assert.isUndefined(yield* machines.findById(machine.id))
          })
        )
      }))
  })
}
