/** The storage contract of SigningKeyRepository. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { T0 } from "./fixtures.js"
import type { ContractTest } from "./support.js"

export const signingKeyCases = (test: ContractTest): void => {
  describe("signing keys", () => {
    test("signing keys: a new current key keeps the old ones listed but not current", () =>
      Effect.gen(function*() {
        const signing = yield* Ports.SigningKeyRepository
        assert.deepStrictEqual(yield* signing.list, [])
        const k1 = { kid: "k1", seed: "c2VlZDE=", publicKey: "cHViMQ==", current: true, createdAt: T0 }
        const k2 = { kid: "k2", seed: "c2VlZDI=", publicKey: "cHViMg==", current: true, createdAt: T0 + 1 }
        const k3 = { kid: "k3", seed: "c2VlZDM=", publicKey: "cHViMw==", current: false, createdAt: T0 + 2 }
        yield* signing.insert(k1)
        assert.deepStrictEqual(yield* signing.list, [k1])
        yield* signing.insert(k2)
        assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false }, k2])
        yield* signing.insert(k3)
        assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false }, k2, k3])
      }))

    test("signing keys: a seed is replaced in place; a key that is not current is retired, the current one never", () =>
      Effect.gen(function*() {
        const signing = yield* Ports.SigningKeyRepository
        const k1 = { kid: "k1", seed: "c2VlZDE=", publicKey: "cHViMQ==", current: true, createdAt: T0 }
        const k2 = { kid: "k2", seed: "c2VlZDI=", publicKey: "cHViMg==", current: true, createdAt: T0 + 1 }
        yield* signing.insert(k1)
        yield* signing.insert(k2)
        yield* signing.replaceSeed("k1", "lm-sealed:v1:abcd:xyz")
        assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false, seed: "lm-sealed:v1:abcd:xyz" }, k2])
        assert.isFalse(yield* signing.retire("k2"))
        assert.isFalse(yield* signing.retire("nope"))
        assert.isTrue(yield* signing.retire("k1"))
        assert.isFalse(yield* signing.retire("k1"))
        assert.deepStrictEqual(yield* signing.list, [k2])
      }))
  })
}
