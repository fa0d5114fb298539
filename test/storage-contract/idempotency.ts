/** The storage contract of IdempotencyRepository (CONTRACT §16). */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { DAY, MINUTE, T0 } from "./fixtures.js"
import type { ContractTest } from "./support.js"
import { yielding } from "./support.js"

const answer = { status: 201, contentType: "application/json", body: "{\"success\":true,\"data\":{\"id\":1},\"meta\":{}}" }
const claimOf = (key: string, requestHash = "h1", apiKeyId = 1) => ({ apiKeyId, key, requestHash, runningUntil: T0 + 5 * MINUTE })

export const idempotencyCases = (test: ContractTest): void => {
  describe("idempotency keys", () => {
    test("idempotency: the first claim holds the key; later ones see it running, then its answer", () =>
      Effect.gen(function*() {
        const records = yield* Ports.IdempotencyRepository
        assert.isUndefined(yield* records.claim(claimOf("k-1"), T0))
        const running = yield* records.claim(claimOf("k-1", "h2"), T0 + 1)
        assert.deepStrictEqual(running, { apiKeyId: 1, key: "k-1", requestHash: "h1", answer: null, expiresAt: T0 + 5 * MINUTE })
        yield* records.complete(1, "k-1", "h1", answer, T0 + DAY)
        assert.deepStrictEqual(yield* records.claim(claimOf("k-1"), T0 + 2), {
          apiKeyId: 1,
          key: "k-1",
          requestHash: "h1",
          answer,
          expiresAt: T0 + DAY
        })
        // The same key of another API key is another record.
        assert.isUndefined(yield* records.claim(claimOf("k-1", "h1", 2), T0 + 3))
      }))

    test("idempotency: an expired record is taken over; prune deletes expired records only", () =>
      Effect.gen(function*() {
        const records = yield* Ports.IdempotencyRepository
        assert.isUndefined(yield* records.claim(claimOf("old"), T0))
        yield* records.complete(1, "old", "h1", answer, T0 + DAY)
        assert.isUndefined(yield* records.claim(claimOf("fresh"), T0))
        yield* records.complete(1, "fresh", "h1", answer, T0 + 2 * DAY)
        assert.isDefined(yield* records.claim(claimOf("old", "h9"), T0 + DAY - 1))
        // At its expiry the record no longer holds the key: a new request claims it, running.
        assert.isUndefined(yield* records.claim({ ...claimOf("old", "h9"), runningUntil: T0 + DAY + MINUTE }, T0 + DAY))
        assert.deepStrictEqual((yield* records.claim(claimOf("old", "h1"), T0 + DAY))?.answer, null)
        assert.strictEqual(yield* records.prune(T0 + DAY), 0)
        assert.strictEqual(yield* records.prune(T0 + DAY + MINUTE), 1)
        assert.deepStrictEqual((yield* records.claim(claimOf("fresh", "h1"), T0 + DAY + MINUTE))?.answer, answer)
        assert.isUndefined(yield* records.claim(claimOf("old", "h1"), T0 + DAY + MINUTE))
      }))

    test("idempotency: a released claim frees the key; release and complete touch only the running claim of that request", () =>
      Effect.gen(function*() {
        const records = yield* Ports.IdempotencyRepository
        assert.isUndefined(yield* records.claim(claimOf("k"), T0))
        yield* records.release(1, "k", "other")
        yield* records.complete(1, "k", "other", answer, T0 + DAY)
        assert.deepStrictEqual((yield* records.claim(claimOf("k"), T0))?.answer, null)
        yield* records.release(1, "k", "h1")
        assert.isUndefined(yield* records.claim(claimOf("k", "h2"), T0))
        yield* records.complete(1, "k", "h2", answer, T0 + DAY)
        // An answered record is not released.
        yield* records.release(1, "k", "h2")
        assert.deepStrictEqual((yield* records.claim(claimOf("k", "h2"), T0))?.answer, answer)
      }))

    test("idempotency: of many concurrent claims of one key exactly one holds it", () =>
      Effect.gen(function*() {
        const records = yielding(yield* Ports.IdempotencyRepository)
        const outcomes = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => records.claim(claimOf("race", `h${i}`), T0)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(outcomes.filter((o) => o === undefined).length, 1)
        const winner = outcomes.findIndex((o) => o === undefined)
        for (const holder of outcomes) if (holder !== undefined) assert.strictEqual(holder.requestHash, `h${winner}`)
      }))
  })
}
