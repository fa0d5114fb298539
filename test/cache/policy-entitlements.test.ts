/**
 * Issue 29: a license's effective entitlements come from the validation cache (no store read per validate), and
 * stay live from its policy: a code removed from the policy is refused by the very next validation in the same
 * process, and within the change feed's bound (1 s here, as for every other change) by another process on the
 * same PostgreSQL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { Engine, Licenses, Licensing, Policies, Ports } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerPostgresStore } from "@lm/storage-pg"
import { freshDatabase, freshPgliteStore, freshPostgresStore } from "../storage-contract/pg-support.js"
import { eventuallyEffect } from "../support/eventually.js"
import { serviceUrl } from "../support/services.js"

const masterKey = Redacted.make(new Uint8Array(32).fill(9))
const engine = (store: Layer.Layer<Engine.StorePorts, any, any>) => Engine.layer(store, { sweepIntervalSeconds: 0, masterKey })

/** Counts the policy reads that reach the store. */
const countingPolicyReads = (counter: { n: number }) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const policies = yield* Ports.PolicyRepository
      return Context.make(Ports.PolicyRepository, {
        ...policies,
        findById: (id: number) => Effect.tap(policies.findById(id), () => Effect.sync(() => void counter.n++))
      })
    })
  )

const codeOf = (licenseKey: string, entitlements: ReadonlyArray<string>) =>
  Effect.flatMap(Licensing, (l) => l.validate({ licenseKey, ipAddress: null, entitlements })).pipe(Effect.map((r) => r.validation.code))

const sameProcess = (name: string, store: () => Layer.Layer<any, any, any>) =>
  describe(`policy entitlements in the validation cache on ${name}`, () => {
    it.live("validations read the policy from memory, and see a code removed from it at once", () => {
      const counter = { n: 0 }
      return Effect.gen(function*() {
        const policies = yield* Policies
        const { policy } = yield* policies.create({ name: "Pro", entitlements: ["export", "sync"] })
        const { license } = yield* (yield* Licenses).create({ policyId: policy.id })
        assert.strictEqual(yield* codeOf(license.key, ["export"]), "valid")
        const after = counter.n
        for (let i = 0; i < 20; i++) assert.strictEqual(yield* codeOf(license.key, ["sync"]), "valid")
        assert.strictEqual(counter.n, after, "no store read of the policy for validations of a cached license")
        yield* policies.update(policy.id, { entitlements: ["sync"] })
        assert.strictEqual(yield* codeOf(license.key, ["export"]), "entitlements_missing")
        const refused = yield* Effect.flatMap(Licensing, (l) => l.validate({ licenseKey: license.key, ipAddress: null, entitlements: ["export", "sync"] }))
        assert.deepStrictEqual(refused.validation.missing, ["export"])
        assert.isNull(refused.signedPayload)
      }).pipe(Effect.provide(engine(countingPolicyReads(counter).pipe(Layer.provideMerge(store())))))
    })
  })

sameProcess("memory", () => MemoryStore.layer)
sameProcess("pglite", freshPgliteStore)

const url = serviceUrl("DATABASE_URL")
if (url !== "") {
  sameProcess("postgres", () => freshPostgresStore(url))

  describe("policy entitlements across two processes on one PostgreSQL", () => {
    it.live("a code removed through A is refused by B within 1 s; a code added through A is held by B as soon", () =>
      Effect.gen(function*() {
        const dbUrl = yield* freshDatabase(url, `lm_policy_${process.pid}_${Date.now()}`)
        const a = yield* Layer.build(Layer.fresh(engine(layerPostgresStore({ url: dbUrl }))))
        const b = yield* Layer.build(Layer.fresh(engine(layerPostgresStore({ url: dbUrl }))))
        const inA = <X, E>(eff: Effect.Effect<X, E, any>) => Effect.provideContext(eff, a as Context.Context<any>)
        const inB = <X, E>(eff: Effect.Effect<X, E, any>) => Effect.provideContext(eff, b as Context.Context<any>)
        const { policy } = yield* inA(Effect.flatMap(Policies, (p) => p.create({ name: "Team", entitlements: ["export"] })))
        const { license } = yield* inA(Effect.flatMap(Licenses, (l) => l.create({ policyId: policy.id })))
        assert.strictEqual(yield* inB(codeOf(license.key, ["export"])), "valid") // now cached in B
        // Polls B for what A changed; 1 s is the bound the cache promises, not a wait.
        const seenWithin1s = (what: string, check: Effect.Effect<void, unknown>) =>
          eventuallyEffect(check, { timeout: 1000, interval: 10 }).pipe(
            Effect.catchCause(() => Effect.sync(() => assert.fail(`${what} through A was not seen by B within 1 s`)))
          )
        yield* inA(Effect.flatMap(Policies, (p) => p.update(policy.id, { entitlements: ["sync"] })))
        yield* seenWithin1s("export removed", Effect.map(inB(codeOf(license.key, ["export"])), (code) => assert.strictEqual(code, "entitlements_missing")))
        assert.strictEqual(yield* inB(codeOf(license.key, ["sync"])), "valid")
        yield* inA(Effect.flatMap(Policies, (p) => p.update(policy.id, { entitlements: ["export", "sync"] })))
        yield* seenWithin1s("export added again", Effect.map(inB(codeOf(license.key, ["export"])), (code) => assert.strictEqual(code, "valid")))
      }).pipe(Effect.scoped), { timeout: 60_000 })
  })
}
