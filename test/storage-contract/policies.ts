/**
 * The storage contract of PolicyRepository: policy rows round-trip every field, a license's reference to its
 * policy and its own codes, `apply`'s reads and writes in one transaction, and `policy_in_use` under a concurrent
 * license insert.
 */
import { assert, describe } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Deferred, Effect, Fiber } from "effect"
import { keyOf, licenseDraft, T0 } from "./fixtures.js"
import { Boom, type ContractTest, failureOf, isPositiveInt } from "./support.js"

/** A policy with the contract's defaults, changed by `overrides`. */
export const policyDraft = (overrides: Partial<Model.PolicyDraft> = {}): Model.PolicyDraft => ({
  name: "Basic",
  productId: null,
  entitlements: [],
  maxActivations: null,
  overageStrategy: "deny",
  isFloating: false,
  leaseDuration: 600,
  requireHeartbeat: false,
  heartbeatInterval: 600,
  validForDays: null,
  graceDays: 0,
  createdAt: T0,
  updatedAt: T0,
  ...overrides
})

export const policyCases = (test: ContractTest): void => {
  describe("policies", () => {
    test("policies: insert, find, list (by product), update and delete round-trip every field", () =>
      Effect.gen(function*() {
        const policies = yield* Ports.PolicyRepository
        const full = policyDraft({
          name: "Pro",
          productId: 7,
          entitlements: ["export", "sync", "team:admin"],
          maxActivations: 3,
          overageStrategy: "allow_1_25x",
          isFloating: true,
          leaseDuration: 900,
          requireHeartbeat: true,
          heartbeatInterval: 120,
          validForDays: 365,
          graceDays: 7,
          createdAt: T0 + 1,
          updatedAt: T0 + 2
        })
        const pro = yield* policies.insert(full)
        const basic = yield* policies.insert(policyDraft())
        assert.isTrue(isPositiveInt(pro.id))
        assert.deepStrictEqual(pro, { ...full, id: pro.id })
        assert.deepStrictEqual(yield* policies.findById(pro.id), pro)
        assert.deepStrictEqual(yield* policies.findById(basic.id), { ...policyDraft(), id: basic.id })
        const all = yield* policies.list({ page: 1, perPage: 1 })
        assert.deepStrictEqual({ ids: all.items.map((p) => p.id), total: all.total }, { ids: [pro.id], total: 2 })
        const ofProduct = yield* policies.list({ page: 1, perPage: 10, productId: 7 })
        assert.deepStrictEqual(ofProduct.items.map((p) => p.id), [pro.id])
        const changed = { ...pro, name: "Pro 2", entitlements: ["export"], productId: null, updatedAt: T0 + 3 }
        assert.deepStrictEqual(yield* policies.update(changed), changed)
        assert.deepStrictEqual(yield* policies.lockById(pro.id), changed)
        yield* policies.delete(pro.id)
        assert.isUndefined(yield* policies.findById(pro.id))
        assert.strictEqual((yield* policies.list({ page: 1, perPage: 10 })).total, 1)
      }))

    test("policies: a license keeps its policy reference and its own codes; counts and locked lists follow them", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const policies = yield* Ports.PolicyRepository
        const licenses = yield* Ports.LicenseRepository
        const team = yield* policies.insert(policyDraft({ name: "Team" }))
        const solo = yield* policies.insert(policyDraft({ name: "Solo" }))
        const a = yield* licenses.insert(licenseDraft({ key: keyOf(1), policyId: team.id, entitlements: ["beta", "export"] }))
        const b = yield* licenses.insert(licenseDraft({ key: keyOf(2), policyId: team.id }))
        yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
        assert.deepStrictEqual(yield* licenses.findById(a.id), a)
        assert.deepStrictEqual([a.policyId, a.entitlements], [team.id, ["beta", "export"]])
        assert.deepStrictEqual(yield* policies.licenseCounts([solo.id, team.id]), [0, 2])
        const locked = yield* store.transaction(policies.lockLicenses(team.id))
        assert.deepStrictEqual(locked.map((l) => l.id), [a.id, b.id])
        // Moving a license to another policy moves its count.
        yield* licenses.update({ ...b, policyId: solo.id, revision: b.revision + 1 })
        assert.deepStrictEqual(yield* policies.licenseCounts([solo.id, team.id]), [1, 1])
      }))

    test("policies: the writes of an apply commit together or not at all", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const policies = yield* Ports.PolicyRepository
        const licenses = yield* Ports.LicenseRepository
        const plan = yield* policies.insert(policyDraft({ maxActivations: 5 }))
        yield* licenses.insert(licenseDraft({ key: keyOf(1), policyId: plan.id, maxActivations: 1 }))
        yield* licenses.insert(licenseDraft({ key: keyOf(2), policyId: plan.id, maxActivations: 2 }))
        const applyAll = Effect.gen(function*() {
          yield* policies.lockById(plan.id)
          for (const license of yield* policies.lockLicenses(plan.id)) {
            yield* licenses.update({ ...license, maxActivations: 5, revision: license.revision + 1 })
          }
        })
        const error = yield* failureOf(store.transaction(Effect.andThen(applyAll, Effect.fail(new Boom()))))
        assert.strictEqual(error._tag, "Boom")
        const before = yield* Effect.forEach([keyOf(1), keyOf(2)], (key) => licenses.findByKey(key))
        assert.deepStrictEqual(before.map((l) => l?.maxActivations), [1, 2])
        yield* store.transaction(applyAll)
        const after = yield* Effect.forEach([keyOf(1), keyOf(2)], (key) => licenses.findByKey(key))
        assert.deepStrictEqual(after.map((l) => l?.maxActivations), [5, 5])
      }))

    test("policies: a policy a license refers to is never deleted (policy_in_use), also while that insert is uncommitted", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const policies = yield* Ports.PolicyRepository
        const licenses = yield* Ports.LicenseRepository
        const used = yield* policies.insert(policyDraft({ name: "Used" }))
        yield* licenses.insert(licenseDraft({ key: keyOf(1), policyId: used.id }))
        assert.strictEqual((yield* failureOf(policies.delete(used.id)))._tag, "PolicyInUse")
        assert.isDefined(yield* policies.findById(used.id))

        const racing = yield* policies.insert(policyDraft({ name: "Racing" }))
        const inserted = yield* Deferred.make<void>()
        const commit = yield* Deferred.make<void>()
        const insert = yield* Effect.forkChild(
          store.transaction(
            Effect.gen(function*() {
              yield* licenses.insert(licenseDraft({ key: keyOf(2), policyId: racing.id }))
              yield* Deferred.succeed(inserted, undefined)
              yield* Deferred.await(commit)
            })
          )
        )
        yield* Deferred.await(inserted)
        const remove = yield* Effect.forkChild(Effect.exit(policies.delete(racing.id)))
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow
        yield* Deferred.succeed(commit, undefined)
        yield* Fiber.join(insert)
        const removed = yield* Fiber.join(remove)
        assert.strictEqual(removed._tag, "Failure")
        if (removed._tag === "Failure") {
          const failure = removed.cause.reasons.find((r) => r._tag === "Fail")
          assert.strictEqual(failure?._tag === "Fail" ? (failure.error as { _tag: string })._tag : undefined, "PolicyInUse")
        }
        assert.isDefined(yield* policies.findById(racing.id))
        assert.strictEqual((yield* licenses.findByKey(keyOf(2)))?.policyId, racing.id)
        // Once no license refers to it, it goes.
        const unused = yield* policies.insert(policyDraft({ name: "Unused" }))
        yield* policies.delete(unused.id)
        assert.isUndefined(yield* policies.findById(unused.id))
      }))
  })
}
