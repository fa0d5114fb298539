/** The storage contract of GeneratorRepository. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { generatorDraft, T0 } from "./fixtures.js"
import { type ContractTest, isPositiveInt } from "./support.js"

export const generatorCases = (test: ContractTest): void => {
  describe("generators", () => {
    test("generators: insert, find, list, update and delete round-trip every field", () =>
      Effect.gen(function*() {
        const generators = yield* Ports.GeneratorRepository
        const full = generatorDraft({
          name: "Full",
          charset: "ABCDEFGHJKLMNPQR",
          chunkLength: 5,
          prefix: "PRO",
          productId: 9,
          defaultMaxActivations: 3,
          defaultValidDays: 365,
          defaultOverageStrategy: "allow_2x",
          defaultIsFloating: true,
          createdAt: T0 + 1,
          updatedAt: T0 + 2
        })
        const g1 = yield* generators.insert(full)
        const g2 = yield* generators.insert(generatorDraft())
        assert.isTrue(isPositiveInt(g1.id))
        assert.deepStrictEqual(g1, { ...full, id: g1.id })
        assert.deepStrictEqual(yield* generators.findById(g1.id), g1)
        assert.deepStrictEqual(yield* generators.findById(g2.id), { ...generatorDraft(), id: g2.id })
        const page = yield* generators.list({ page: 1, perPage: 1 })
        assert.deepStrictEqual({ ids: page.items.map((g) => g.id), total: page.total }, { ids: [g1.id], total: 2 })
        const changed = { ...g1, name: "Renamed", productId: null, defaultIsFloating: false, updatedAt: T0 + 3 }
        assert.deepStrictEqual(yield* generators.update(changed), changed)
        assert.deepStrictEqual(yield* generators.findById(g1.id), changed)
        yield* generators.delete(g1.id)
        assert.isUndefined(yield* generators.findById(g1.id))
        assert.strictEqual((yield* generators.list({ page: 1, perPage: 10 })).total, 1)
      }))
  })
}
