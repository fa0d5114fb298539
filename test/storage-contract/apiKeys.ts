/** The storage contract of ApiKeyRepository. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { apiKeyDraft, T0 } from "./fixtures.js"
import type { ContractTest } from "./support.js"

export const apiKeyCases = (test: ContractTest): void => {
  describe("API keys", () => {
    test("API keys: insert, find by hash, list, touch, count and delete", () =>
      Effect.gen(function*() {
        const keys = yield* Ports.ApiKeyRepository
        assert.strictEqual(yield* keys.count, 0)
        const k1 = yield* keys.insert(apiKeyDraft(1, { scope: "read", lastAccessAt: T0 + 5 }))
        const k2 = yield* keys.insert(apiKeyDraft(2))
        assert.deepStrictEqual(k1, { ...apiKeyDraft(1, { scope: "read", lastAccessAt: T0 + 5 }), id: k1.id })
        assert.deepStrictEqual(yield* keys.findByConsumerKeyHash("ck-hash-2"), k2)
        assert.isUndefined(yield* keys.findByConsumerKeyHash("ck-hash-3"))
        assert.strictEqual(yield* keys.count, 2)
        const page = yield* keys.list({ page: 2, perPage: 1 })
        assert.deepStrictEqual({ ids: page.items.map((k) => k.id), total: page.total }, { ids: [k2.id], total: 2 })
        yield* keys.touch(k2.id, T0 + 60_000)
        assert.strictEqual((yield* keys.findByConsumerKeyHash("ck-hash-2"))?.lastAccessAt, T0 + 60_000)
        assert.isTrue(yield* keys.delete(k1.id))
        assert.isFalse(yield* keys.delete(k1.id))
        assert.isUndefined(yield* keys.findByConsumerKeyHash("ck-hash-1"))
        assert.strictEqual(yield* keys.count, 1)
      }))

    test("API keys: a key deleted with deleteRemembered is remembered by its consumer key hash, a plain delete is not", () =>
      Effect.gen(function*() {
        const keys = yield* Ports.ApiKeyRepository
        const k1 = yield* keys.insert(apiKeyDraft(1))
        const k2 = yield* keys.insert(apiKeyDraft(2))
        assert.isFalse(yield* keys.wasDeleted("ck-hash-1"))
        assert.isTrue(yield* keys.deleteRemembered(k1.id, T0))
        assert.isFalse(yield* keys.deleteRemembered(k1.id, T0))
        assert.isTrue(yield* keys.delete(k2.id))
        assert.deepStrictEqual(
          [yield* keys.wasDeleted("ck-hash-1"), yield* keys.wasDeleted("ck-hash-2"), yield* keys.count],
          [true, false, 0]
        )
        // The same consumer key inserted and deleted again stays remembered once.
        const again = yield* keys.insert(apiKeyDraft(1))
        assert.isTrue(yield* keys.deleteRemembered(again.id, T0 + 1))
        assert.isTrue(yield* keys.wasDeleted("ck-hash-1"))
      }))
  })
}
