/** The domain's services running on the memory store: pool draws, seats, the sweep, revocation and the log. */
import { assert, describe, it } from "@effect/vitest"
import { Engine, Generators, Licenses, Licensing, Machines, Ports, Random, Sweeper } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const T0 = Date.UTC(2026, 0, 1)

const engine = Engine.services().pipe(Layer.provideMerge(Layer.mergeAll(Layer.fresh(MemoryStore.layer), Random.layerCrypto)))

/**
 * Runs `body` on the services from `T0`. The clock is set before the services start: moving a TestClock far
 * ahead afterwards would replay every tick of the activity recorder's periodic flush.
 */
const fromT0 = <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.andThen(TestClock.setTime(T0), body)

describe("domain services on the memory store", () => {
  it.effect("concurrent creates from a generator draw distinct pool keys; deleting the generator empties the pool", () =>
    fromT0(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Pro", defaultMaxActivations: 2 })
      const pool = yield* generators.generate(generator.id, 50, {})
      assert.strictEqual(pool.length, 50)
      assert.isTrue(pool.every((view) => view.status === "pending"))
      const created = yield* Effect.all(Array.from({ length: 10 }, () => licenses.create({ generatorId: generator.id })), {
        concurrency: "unbounded"
      })
      const keys = created.map((view) => view.license.key)
      assert.strictEqual(new Set(keys).size, 10)
      const poolKeys = new Set(pool.map((view) => view.license.key))
      assert.isTrue(keys.every((key) => poolKeys.has(key)))
      assert.isTrue(created.every((view) => view.license.state === "issued" && view.license.maxActivations === 2))
      assert.strictEqual((yield* generators.get(generator.id)).poolSize, 40)
      assert.deepStrictEqual(yield* generators.delete(generator.id), { id: generator.id, poolKeysDeleted: 40 })
      const left = yield* licenses.list({ page: 1, perPage: 100 })
      assert.strictEqual(left.total, 10)
    }).pipe(Effect.provide(engine))))

  it.effect("a floating lease that runs out is swept; the freed seat can be taken again", () =>
    fromT0(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const sweeper = yield* Sweeper
      const { license } = yield* licenses.create({ maxActivations: 1, isFloating: true, leaseDuration: 60 })
      const first = yield* licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-1" }, ipAddress: null })
      assert.isTrue(first.created)
      const refused = yield* Effect.flip(licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-2" }, ipAddress: null }))
      assert.strictEqual(refused._tag, "MachineLimitExceeded")
      assert.strictEqual((yield* licenses.list({ page: 1, perPage: 10, status: "active" })).total, 1)

      yield* TestClock.adjust("61 seconds")
      assert.strictEqual(yield* sweeper.sweepOnce, 1)
      assert.strictEqual(yield* sweeper.sweepOnce, 0)
      const machine = yield* (yield* Machines).get(first.machine.id)
      assert.deepStrictEqual([machine.status, machine.deactivationReason], ["inactive", "lease_expired"])
      assert.strictEqual((yield* licenses.list({ page: 1, perPage: 10, status: "inactive" })).total, 1)
      const second = yield* licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-2" }, ipAddress: null })
      assert.isTrue(second.created)
    }).pipe(Effect.provide(engine))))

  it.effect("revoking advances the revocation seq; client calls reach the activity log", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const licenseId = yield* Effect.gen(function*() {
        const licenses = yield* Licenses
        const licensing = yield* Licensing
        const outbox = yield* Ports.EventOutbox
        const { license } = yield* licenses.create({})
        const before = yield* outbox.revocationSeq
        yield* licenses.update(license.key, { userId: 5 })
        assert.strictEqual(yield* outbox.revocationSeq, before)
        yield* licenses.revoke(license.key)
        assert.isTrue((yield* outbox.revocationSeq) > before)
        const validation = yield* licensing.validate({ licenseKey: license.key, ipAddress: null })
        assert.strictEqual(validation.validation.code, "license_revoked")
        return license.id
      }).pipe(Effect.provide(Engine.services()))
      // Closing the services flushed the buffered activity to the log, which outlives them.
      const log = yield* Ports.ActivityLog
      assert.strictEqual(yield* log.count({ licenseId }), 1)
    }).pipe(Effect.provide(Layer.mergeAll(Layer.fresh(MemoryStore.layer), Random.layerCrypto))))
})
