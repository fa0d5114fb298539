/** The storage contract of EventOutbox: events in order, the revocation sequence. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { event } from "./fixtures.js"
import { type ContractTest, isPositiveInt } from "./support.js"

export const outboxCases = (test: ContractTest): void => {
  describe("outbox", () => {
    test("events are read back in order with increasing ids, in pages", () =>
      Effect.gen(function*() {
        const outbox = yield* Ports.EventOutbox
        assert.deepStrictEqual(yield* outbox.readAfter(0, 10), [])
        yield* outbox.append([event("license.created", 1, 5), event("machine.activated", 2)])
        yield* outbox.append([])
        yield* outbox.append([event("license.updated", 3, 5)])
        const all = yield* outbox.readAfter(0, 10)
        assert.deepStrictEqual(all.map(({ id: _, ...e }) => e), [event("license.created", 1, 5), event("machine.activated", 2), event("license.updated", 3, 5)])
        const ids = all.map((e) => e.id)
        assert.isTrue(ids.every(isPositiveInt))
        assert.isTrue(ids[0]! < ids[1]! && ids[1]! < ids[2]!)
        assert.deepStrictEqual(yield* outbox.readAfter(0, 2), all.slice(0, 2))
        assert.deepStrictEqual(yield* outbox.readAfter(ids[1]!, 10), all.slice(2))
        assert.deepStrictEqual(yield* outbox.readAfter(ids[2]!, 10), [])
      }))

    test("the revocation seq grows on a revoking event and not on others", () =>
      Effect.gen(function*() {
        const outbox = yield* Ports.EventOutbox
        const start = yield* outbox.revocationSeq
        yield* outbox.append([event("license.created", 1), event("machine.activated", 2)])
        assert.strictEqual(yield* outbox.revocationSeq, start)
        let last = start
        for (const type of ["license.revoked", "license.suspended", "license.reinstated", "license.terminated", "license.deleted", "machine.revoked"] as const) {
          yield* outbox.append([event("license.updated", 3), event(type, 4)])
          const now = yield* outbox.revocationSeq
          assert.isTrue(now > last, `${type} advances the seq`)
          last = now
        }
        yield* outbox.append([event("license.renewed", 5), event("machine.deactivated", 6), event("generator.keys_generated", 7)])
        assert.strictEqual(yield* outbox.revocationSeq, last)
      }))
  })
}
