/** The storage contract of WebhookRepository. */
import { assert, describe } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { DAY, deliveryDraft, event, T0, webhookDraft } from "./fixtures.js"
import { type ContractTest, isPositiveInt } from "./support.js"

export const webhookCases = (test: ContractTest): void => {
  describe("webhooks", () => {
    test("webhooks round-trip every field; list, listActive, update and delete (with their deliveries)", () =>
      Effect.gen(function*() {
        const repo = yield* Ports.WebhookRepository
        const queue = yield* Ports.WebhookDeliveryQueue
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const a = yield* repo.insert(webhookDraft({ events: ["*"], failingSince: T0 - DAY }))
        const b = yield* repo.insert(webhookDraft({ name: "second", status: "disabled" }))
        assert.isTrue(isPositiveInt(a.id) && b.id > a.id)
        assert.deepStrictEqual(a, { ...webhookDraft({ events: ["*"], failingSince: T0 - DAY }), id: a.id })
        assert.deepStrictEqual(yield* repo.findById(b.id), b)
        assert.isUndefined(yield* repo.findById(b.id + 100))
        const page = yield* repo.list({ page: 1, perPage: 1 })
        assert.deepStrictEqual([page.items.map((w) => w.id), page.total], [[a.id], 2])
        assert.deepStrictEqual((yield* repo.listActive).map((w) => w.id), [a.id])
        const enabled = yield* repo.update({ ...b, status: "active", url: "https://other.example.com/" })
        assert.deepStrictEqual(yield* repo.findById(b.id), enabled)
        assert.deepStrictEqual((yield* repo.listActive).map((w) => w.id), [a.id, b.id])

        yield* outbox.append([event("license.created", 1)])
        yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* queue.dispatch(events.map((e) => e.id), [deliveryDraft(a.id, events[0]!.id), deliveryDraft(b.id, events[0]!.id)])
        }))
        assert.strictEqual((yield* queue.list(a.id, { page: 1, perPage: 10 })).total, 1)
        assert.isTrue(yield* repo.delete(a.id))
        assert.isFalse(yield* repo.delete(a.id))
        assert.isUndefined(yield* repo.findById(a.id))
        assert.strictEqual((yield* queue.list(a.id, { page: 1, perPage: 10 })).total, 0)
        assert.strictEqual((yield* queue.list(b.id, { page: 1, perPage: 10 })).total, 1)
      }))

    test("lockById loads a webhook (or nothing) and serialises concurrent read-modify-write transactions", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const repo = yield* Ports.WebhookRepository
        const webhook = yield* repo.insert(webhookDraft({ failingSince: 0 }))
        assert.deepStrictEqual(yield* store.transaction(repo.lockById(webhook.id)), webhook)
        assert.isUndefined(yield* store.transaction(repo.lockById(webhook.id + 1000)))
        // Each transaction adds 1 to failingSince after reading it under the lock: none is lost.
        const increment = store.transaction(
          Effect.gen(function*() {
            const current = yield* repo.lockById(webhook.id)
            if (current === undefined) return yield* Effect.die("webhook vanished")
            // Let the other fibers run between the read and the write.
            yield* Effect.yieldNow
            yield* repo.update({ ...current, failingSince: current.failingSince! + 1 })
          })
        )
        yield* Effect.forEach(Array.from({ length: 50 }), () => increment, { concurrency: "unbounded" })
        assert.strictEqual((yield* repo.findById(webhook.id))?.failingSince, 50)
      }))
  })
}
