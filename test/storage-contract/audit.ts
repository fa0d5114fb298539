/** The storage contract of AuditLogRepository. */
import { assert, describe } from "@effect/vitest"
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { T0 } from "./fixtures.js"
import { Boom, type ContractTest } from "./support.js"

const draft = (n: number, over: Partial<Model.AuditDraft> = {}): Model.AuditDraft => ({
  at: T0 + n * 1_000,
  actor: { type: "api_key", apiKeyId: 7, truncatedKey: "…abc1234" },
  ip: "203.0.113.9",
  action: "license.revoke",
  target: { type: "license", id: `KEY-${n}` },
  requestId: `req-${n}`,
  status: 200,
  ...over
})

export const auditCases = (test: ContractTest): void => {
  describe("audit log", () => {
    test("audit log: append returns the entry; list is newest first, filtered and paged", () =>
      Effect.gen(function*() {
        const log = yield* Ports.AuditLogRepository
        const first = yield* log.append(draft(1))
        assert.deepStrictEqual(first, { ...draft(1), id: first.id })
        yield* log.append(draft(2, { action: "license.create", status: 201, target: { type: "license", id: null } }))
        yield* log.append(draft(3, { actor: { type: "cli", apiKeyId: null, truncatedKey: null }, ip: null, requestId: null }))
        yield* log.append(draft(4, { action: "api_key.create", target: { type: "api_key", id: "3" }, status: 403 }))
        const all = yield* log.list({}, { page: 1, perPage: 100 })
        assert.deepStrictEqual(all.items.map((e) => e.requestId), ["req-4", null, "req-2", "req-1"])
        assert.strictEqual(all.total, 4)
        const ids = (filter: Model.AuditFilter) =>
          Effect.map(log.list(filter, { page: 1, perPage: 100 }), (page) => page.items.map((e) => e.at - T0))
        assert.deepStrictEqual(yield* ids({ actor: "cli" }), [3_000])
        assert.deepStrictEqual(yield* ids({ actor: 7 }), [4_000, 2_000, 1_000])
        assert.deepStrictEqual(yield* ids({ actor: "api_key", action: "license.revoke" }), [1_000])
        assert.deepStrictEqual(yield* ids({ targetType: "license" }), [3_000, 2_000, 1_000])
        assert.deepStrictEqual(yield* ids({ targetType: "license", targetId: "KEY-3" }), [3_000])
        assert.deepStrictEqual(yield* ids({ from: T0 + 2_000, to: T0 + 4_000 }), [3_000, 2_000])
        const page2 = yield* log.list({}, { page: 2, perPage: 3 })
        assert.deepStrictEqual({ at: page2.items.map((e) => e.at - T0), total: page2.total }, { at: [1_000], total: 4 })
      }))

    test("audit log: an append inside a transaction that fails is rolled back with it", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const log = yield* Ports.AuditLogRepository
        yield* Effect.flip(store.transaction(Effect.andThen(log.append(draft(1)), Effect.fail(new Boom()))))
        yield* store.transaction(log.append(draft(2)))
        const all = yield* log.list({}, { page: 1, perPage: 10 })
        assert.deepStrictEqual(all.items.map((e) => e.requestId), ["req-2"])
      }))

    test("audit log: prune deletes the oldest entries before a time, at most `limit`", () =>
      Effect.gen(function*() {
        const log = yield* Ports.AuditLogRepository
        for (const n of [5, 1, 3, 2, 4]) yield* log.append(draft(n))
        assert.strictEqual(yield* log.prune(T0 + 4_000, 2), 2)
        assert.strictEqual(yield* log.prune(T0 + 4_000, 2), 1)
        assert.strictEqual(yield* log.prune(T0 + 4_000, 2), 0)
        const left = yield* log.list({}, { page: 1, perPage: 10 })
        assert.deepStrictEqual(left.items.map((e) => e.at - T0).sort(), [4_000, 5_000])
      }))
  })
}
