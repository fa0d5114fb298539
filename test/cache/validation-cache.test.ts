/**
 * The validation cache (issue 6): validate reads from memory, and still sees every revoke, suspend, terminate
 * and seat change at once in the same process, and within 1 s in another process on the same PostgreSQL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Engine, Licenses, Licensing, Machines, Ports, RevocationList, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { freshDatabase, reusedPgliteStores, reusedPostgresStores } from "../storage-contract/pg-support.js"
import { layerPostgresStore } from "@lm/storage-pg"
import { eventuallyEffect } from "../support/eventually.js"
import { serviceUrl } from "../support/services.js"

/** Processes sharing one store share its master key (the signing seed is sealed with it). */
const masterKey = Redacted.make(new Uint8Array(32).fill(7))
const engine = (store: Layer.Layer<Engine.StorePorts, any, any>, validationCache?: Services.ValidationCacheOptions) =>
  Engine.layer(store, { sweepIntervalSeconds: 0, masterKey, validationCache })

/** Counts the store reads validation makes, to prove the cache serves repeated validations. */
const countingReads = (counter: { n: number }) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const machines = yield* Ports.MachineRepository
      return Context.make(Ports.LicenseRepository, {
        ...licenses,
        findByKey: (key: string) => Effect.tap(licenses.findByKey(key), () => Effect.sync(() => void counter.n++))
      }).pipe(Context.add(Ports.MachineRepository, {
        ...machines,
        listActive: (id: number) => Effect.tap(machines.listActive(id), () => Effect.sync(() => void counter.n++))
      }))
    })
  )

const sameProcessCases = (name: string, store: () => Layer.Layer<any, any, any>) =>
  describe(`validation cache on ${name}`, () => {
    it.live("repeated validations are served from memory", () => {
      const counter = { n: 0 }
      return Effect.gen(function*() {
        const licenses = yield* Licenses
        const licensing = yield* Licensing
        const created = yield* licenses.create({ maxActivations: 2 })
        yield* licensing.validate({ licenseKey: created.license.key, ipAddress: null })
        const after = counter.n
        for (let i = 0; i < 20; i++) yield* licensing.validate({ licenseKey: created.license.key, ipAddress: null })
        assert.strictEqual(counter.n, after, "no store read for validations of a cached license")
      }).pipe(Effect.provide(engine(countingReads(counter).pipe(Layer.provideMerge(store())))))
    })

    it.effect("an entry past its age is reloaded once, then served from memory again", () => {
      const counter = { n: 0 }
      return Effect.gen(function*() {
        const licenses = yield* Licenses
        const licensing = yield* Licensing
        const created = yield* licenses.create({ maxActivations: 2 })
        yield* licensing.activate({ licenseKey: created.license.key, facts: { fingerprint: "fp-1" }, ipAddress: null })
        const validate = (fingerprint?: string) => licensing.validate({ licenseKey: created.license.key, fingerprint, ipAddress: null })
        yield* validate()
        yield* validate("fp-1")
        for (let minute = 1; minute <= 3; minute++) {
          yield* TestClock.adjust("61 seconds") // past the default age of 60 s
          const before = counter.n
          yield* validate()
          yield* validate("fp-1")
          assert.isAbove(counter.n, before, `minute ${minute}: the stale entry is reloaded`)
          const reloaded = counter.n
          for (let i = 0; i < 20; i++) {
            yield* validate()
            assert.strictEqual((yield* validate("fp-1")).validation.code, "valid")
          }
          assert.strictEqual(counter.n, reloaded, `minute ${minute}: validations after the reload are served from memory`)
        }
        // The age rule alone: PostgreSQL's feed sends its heartbeats on this TestClock too, and one sent at an
        // `adjust` comes back a moment later in real time; the feed's own bound is tested in feed-liveness.test.ts.
      }).pipe(Effect.provide(engine(countingReads(counter).pipe(Layer.provideMerge(store())), { feedStaleMillis: 600_000 })))
    })

    it.live("every state and seat change is seen by the very next validation", () =>
      Effect.gen(function*() {
        const licenses = yield* Licenses
        const licensing = yield* Licensing
        const machines = yield* Machines
        const { license } = yield* licenses.create({ maxActivations: 1 })
        const key = license.key
        const code = (fingerprint?: string) =>
          Effect.map(licensing.validate({ licenseKey: key, fingerprint, ipAddress: null }), (r) => r.validation.code)
        assert.strictEqual(yield* code("fp-1"), "fingerprint_not_activated")
        const { machine } = yield* licensing.activate({ licenseKey: key, facts: { fingerprint: "fp-1" }, ipAddress: null })
        assert.strictEqual(yield* code("fp-1"), "valid")
        yield* licenses.suspend(key)
        assert.strictEqual(yield* code(), "license_suspended")
        yield* licenses.reinstate(key)
        assert.strictEqual(yield* code("fp-1"), "valid")
        yield* machines.revoke(machine.id)
        assert.strictEqual(yield* code("fp-1"), "machine_revoked")
        yield* licenses.revoke(key)
        assert.strictEqual(yield* code(), "license_revoked")
        yield* licenses.reinstate(key)
        yield* licenses.update(key, { maxActivations: 5 })
        const r = yield* licensing.validate({ licenseKey: key, fingerprint: "fp-2", ipAddress: null })
        assert.isTrue(r.validation.needsActivation)
        yield* licenses.terminate(key, true)
        assert.strictEqual(yield* code(), "license_terminated")
        yield* licenses.delete(key)
        const gone = yield* Effect.flip(licensing.validate({ licenseKey: key, ipAddress: null }))
        assert.strictEqual(gone._tag, "LicenseNotFound")
      }).pipe(Effect.provide(engine(store()))))
  })

sameProcessCases("memory", () => MemoryStore.layer)
sameProcessCases("pglite", reusedPgliteStores())

const url = serviceUrl("DATABASE_URL")
if (url !== "") {
  sameProcessCases("postgres", reusedPostgresStores(url))

  describe("validation cache across two processes on one PostgreSQL", () => {
    it.live("a change committed by one process is seen by the other within 1 s", () =>
      Effect.gen(function*() {
        // One database, two engines with their own pools and caches: two server processes.
        const dbUrl = yield* freshDatabase(url, `lm_cache_${process.pid}_${Date.now()}`)
        const a = yield* Layer.build(Layer.fresh(engine(layerPostgresStore({ url: dbUrl }))))
        const b = yield* Layer.build(Layer.fresh(engine(layerPostgresStore({ url: dbUrl }))))
        const inA = <X, E>(eff: Effect.Effect<X, E, any>) => Effect.provideContext(eff, a as Context.Context<any>)
        const inB = <X, E>(eff: Effect.Effect<X, E, any>) => Effect.provideContext(eff, b as Context.Context<any>)
        const { license } = yield* inA(Effect.flatMap(Licenses, (l) => l.create({ maxActivations: 1 })))
        const codeInA = inA(Effect.flatMap(Licensing, (l) => l.validate({ licenseKey: license.key, ipAddress: null }))).pipe(
          Effect.map((r) => r.validation.code)
        )
        assert.strictEqual(yield* codeInA, "valid") // now cached in A
        // Polls A for what B changed; 1 s is the bound the cache promises, not a wait.
        const seenWithin1s = (what: string, check: Effect.Effect<void, unknown>) =>
          eventuallyEffect(check, { timeout: 1000, interval: 10 }).pipe(
            Effect.catchCause(() => Effect.sync(() => assert.fail(`${what} by B was not seen by A within 1 s`)))
          )
        for (const [action, expected] of [["suspend", "license_suspended"], ["reinstate", "valid"], ["revoke", "license_revoked"]] as const) {
          yield* inB(Effect.flatMap(Licenses, (l) => l[action](license.key)))
          yield* seenWithin1s(action, Effect.map(codeInA, (code) => assert.strictEqual(code, expected)))
        }
        // A seat taken in B shows in A's validation.
        yield* inB(Effect.flatMap(Licenses, (l) => l.reinstate(license.key)))
        yield* inB(Effect.flatMap(Licensing, (l) => l.activate({ licenseKey: license.key, facts: { fingerprint: "fp-b" }, ipAddress: null })))
        yield* seenWithin1s("an activation", Effect.map(
          inA(Effect.flatMap(Licensing, (l) => l.validate({ licenseKey: license.key, fingerprint: "fp-b", ipAddress: null }))),
          (r) => assert.strictEqual(r.validation.code, "valid")
        ))

        // The CRL served by A reflects B's revoke in A's very next request (its seq lives in the database).
        const crlInA = inA(Effect.flatMap(RevocationList, (crl) => crl.current))
        const before = yield* crlInA
        yield* inB(Effect.flatMap(Licenses, (l) => l.revoke(license.key)))
        const after = yield* crlInA
        assert.isAbove(after.seq, before.seq)
        assert.notStrictEqual(after.etag, before.etag)
      }).pipe(Effect.scoped), { timeout: 60_000 })
  })
}
