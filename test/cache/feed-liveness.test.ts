/**
 * Issue 19, partitions: the validation cache serves only while its change feed is known to be alive. Two engines
 * share one memory store (two server processes on one database); engine A hears the other's changes through a
 * feed the test drives by hand, heartbeats included, so a cut feed is simply one that stops reporting. The clock
 * is Effect's TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Engine, Errors, Licenses, Licensing, Policies, Ports, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"

const masterKey = Redacted.make(new Uint8Array(32).fill(7))
const options = { sweepIntervalSeconds: 0, eventRetentionDays: 0, masterKey }

/** The store under engine A, counting its license reads and failing them all while `down` is set. */
interface Probe {
  reads: number
  down: boolean
  report: (change: Ports.LicenseChange) => void
}

const probedStore = (probe: Probe) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      return Context.make(Ports.LicenseRepository, {
        ...licenses,
        findByKey: (key: string) =>
          Effect.suspend(() => {
            probe.reads++
            return probe.down ? Effect.fail(new Errors.StorageUnavailable({ message: "the store is unreachable" })) : licenses.findByKey(key)
          })
      }).pipe(Context.add(Ports.LicenseChangeFeed, {
        heartbeats: true,
        subscribe: (onChange: (change: Ports.LicenseChange) => void) => Effect.sync(() => void (probe.report = onChange))
      }))
    })
  )

describe("validation cache and the liveness of its change feed", () => {
  it.effect("serves while the feed's heartbeat is recent, goes to the store once it is silent past the bound", () => {
    const logged: Array<string> = []
    const logger = Logger.make((entry) => {
      if (entry.logLevel === "Warn" || entry.logLevel === "Info") {
        logged.push(`${entry.logLevel}: ${String(Array.isArray(entry.message) ? entry.message[0] : entry.message)}`)
      }
    })
    return Effect.gen(function*() {
      const probe: Probe = { reads: 0, down: false, report: () => {} }
      const shared = yield* Layer.build(MemoryStore.layer)
      const store = Layer.succeedContext(shared)
      const a = yield* Layer.build(Layer.fresh(Engine.layer(probedStore(probe).pipe(Layer.provideMerge(store)), options)))
      const b = yield* Layer.build(Layer.fresh(Engine.layer(store, options)))
      const { license } = yield* Effect.provideContext(Licenses.use((l) => l.create({})), b)
      const validateOnA = Effect.provideContext(
        Licensing.use((l) => Effect.map(l.validate({ licenseKey: license.key, ipAddress: null }), (r) => r.validation.code)),
        a
      )
      const heartbeat = Effect.map(Ports.feedTimeMillis, (now) => probe.report({ aliveAsOf: now }))

      yield* heartbeat
      assert.strictEqual(yield* validateOnA, "valid")
      const loaded = probe.reads
      yield* Effect.provideContext(Licenses.use((l) => l.revoke(license.key)), b)
      // The revocation's notification has not arrived: while the feed is fresh the cache may serve.
      yield* TestClock.adjust(Services.defaultFeedStaleMillis)
      assert.strictEqual(yield* validateOnA, "valid", "served from the cache while the feed is alive")
      assert.strictEqual(probe.reads, loaded, "no store read while the feed is alive")

      // One millisecond past the bound without a heartbeat: every validation reads the store.
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* validateOnA, "license_revoked", "read from the store once the feed is silent")
      assert.strictEqual(yield* validateOnA, "license_revoked")
      assert.strictEqual(probe.reads, loaded + 2, "each validation reads the store while the feed is silent")

      // A silent feed and a store that does not answer: unavailable (503), never the cached `valid`.
      probe.down = true
      const refused = yield* Effect.flip(validateOnA)
      assert.strictEqual(refused._tag, "StorageUnavailable")

      // The feed is back (its missed change with it): served from memory again.
      probe.down = false
      probe.report(license.id)
      yield* heartbeat
      assert.strictEqual(yield* validateOnA, "license_revoked")
      const reloaded = probe.reads
      for (let i = 0; i < 10; i++) assert.strictEqual(yield* validateOnA, "license_revoked")
      assert.strictEqual(probe.reads, reloaded, "served from the cache once the feed is alive again")

      // The operator reads one line when the silence begins and one when it ends, not one per validation.
      assert.deepStrictEqual(logged.filter((line) => line.includes("change feed")), [
        "Warn: The store's change feed has been silent for more than 2000 ms: validations read the store until it is heard again",
        "Info: The store's change feed is heard again: validations are served from the cache"
      ])
    }).pipe(Effect.scoped, Effect.provide(Logger.layer([logger])))
  })

  it.effect("a policy's codes follow the same rule: served while the feed is alive, from the store once it is silent or the entry is old", () =>
    Effect.gen(function*() {
      const probe: Probe = { reads: 0, down: false, report: () => {} }
      const shared = yield* Layer.build(MemoryStore.layer)
      const store = Layer.succeedContext(shared)
      const a = yield* Layer.build(Layer.fresh(Engine.layer(probedStore(probe).pipe(Layer.provideMerge(store)), options)))
      const b = yield* Layer.build(Layer.fresh(Engine.layer(store, options)))
      const inB = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provideContext(effect, b as Context.Context<any>)
      const { policy } = yield* inB(Policies.use((p) => p.create({ name: "Pro", entitlements: ["export", "sync"] })))
      const { license } = yield* inB(Licenses.use((l) => l.create({ policyId: policy.id })))
      const exportOnA = Effect.provideContext(
        Licensing.use((l) => Effect.map(l.validate({ licenseKey: license.key, ipAddress: null, entitlements: ["export"] }), (r) => r.validation.code)),
        a
      )
      const heartbeat = Effect.map(Ports.feedTimeMillis, (now) => probe.report({ aliveAsOf: now }))

      // Changed through B, and the feed does not report it: A serves the codes it holds while the feed is alive.
      yield* heartbeat
      assert.strictEqual(yield* exportOnA, "valid")
      yield* inB(Policies.use((p) => p.update(policy.id, { entitlements: ["sync"] })))
      yield* TestClock.adjust(Services.defaultFeedStaleMillis)
      assert.strictEqual(yield* exportOnA, "valid", "served from the cache while the feed is alive")
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* exportOnA, "entitlements_missing", "read from the store once the feed is silent")

      // With the feed alive again, an unreported change is still seen once the entry is past its age (60 s).
      yield* heartbeat
      assert.strictEqual(yield* exportOnA, "entitlements_missing")
      yield* inB(Policies.use((p) => p.update(policy.id, { entitlements: ["export"] })))
      yield* TestClock.adjust(59_000)
      yield* heartbeat
      assert.strictEqual(yield* exportOnA, "entitlements_missing", "served from the cache within its age")
      yield* TestClock.adjust(1_000)
      yield* heartbeat
      assert.strictEqual(yield* exportOnA, "valid", "reloaded past its age")
    }).pipe(Effect.scoped))

  it.effect("a feed that has not yet sent a heartbeat is not alive", () =>
    Effect.gen(function*() {
      const probe: Probe = { reads: 0, down: false, report: () => {} }
      const a = yield* Layer.build(Engine.layer(probedStore(probe).pipe(Layer.provideMerge(MemoryStore.layer)), options))
      const validate = (key: string) =>
        Effect.provideContext(Licensing.use((l) => l.validate({ licenseKey: key, ipAddress: null })), a)
      const { license } = yield* Effect.provideContext(Licenses.use((l) => l.create({})), a)
      yield* validate(license.key)
      const before = probe.reads
      yield* validate(license.key)
      assert.strictEqual(probe.reads, before + 1)
    }).pipe(Effect.scoped))

  it.effect("the bound is a setting", () =>
    Effect.gen(function*() {
      const probe: Probe = { reads: 0, down: false, report: () => {} }
      const a = yield* Layer.build(
        Engine.layer(probedStore(probe).pipe(Layer.provideMerge(MemoryStore.layer)), { ...options, validationCache: { feedStaleMillis: 10_000 } })
      )
      const validate = (key: string) =>
        Effect.provideContext(Licensing.use((l) => l.validate({ licenseKey: key, ipAddress: null })), a)
      const { license } = yield* Effect.provideContext(Licenses.use((l) => l.create({})), a)
      probe.report({ aliveAsOf: yield* Ports.feedTimeMillis })
      yield* validate(license.key)
      const loaded = probe.reads
      yield* TestClock.adjust(10_000)
      yield* validate(license.key)
      assert.strictEqual(probe.reads, loaded, "served at the bound")
      yield* TestClock.adjust(1)
      yield* validate(license.key)
      assert.strictEqual(probe.reads, loaded + 1, "read from the store past the bound")
    }).pipe(Effect.scoped))
})
