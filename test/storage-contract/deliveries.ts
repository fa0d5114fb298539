/** The storage contract of WebhookDeliveryQueue: dispatch of outbox events, deliveries claimed for a lease. */
import { assert, describe } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Effect, Exit, Ref } from "effect"
import { deliveryDraft, event, MINUTE, T0, webhookDraft } from "./fixtures.js"
import { Boom, type ContractTest } from "./support.js"

export const deliveryCases = (test: ContractTest): void => {
  describe("webhook deliveries", () => {
    test("each committed event is claimed for dispatch until a dispatch commits; a rollback gives it back", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const queue = yield* Ports.WebhookDeliveryQueue
        yield* outbox.append([event("license.created", 1, 5), event("machine.activated", 2)])
        const types = (events: ReadonlyArray<Model.StoredEvent>) => events.map((e) => e.type)
        const rolledBack = yield* Effect.exit(store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* queue.dispatch(events.map((e) => e.id), [])
          return yield* Effect.fail(new Boom())
        })))
        assert.isTrue(Exit.isFailure(rolledBack))
        const claimed = yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* queue.dispatch(events.map((e) => e.id), [])
          return events
        }))
        assert.deepStrictEqual(types(claimed), ["license.created", "machine.activated"])
        const first = claimed[0]!
        assert.deepStrictEqual(yield* outbox.findById(first.id), first)
        assert.deepStrictEqual({ ...first, id: 0 }, { ...event("license.created", 1, 5), id: 0 })
        assert.deepStrictEqual(yield* store.transaction(queue.claimUndispatched(10)), [])
        yield* outbox.append([event("license.updated", 3)])
        assert.deepStrictEqual(types(yield* store.transaction(queue.claimUndispatched(10))), ["license.updated"])
      }))

    test("concurrent dispatchers never claim one event twice and together claim them all", () =>
      Effect.gen(function*() {
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const queue = yield* Ports.WebhookDeliveryQueue
        yield* outbox.append(Array.from({ length: 50 }, (_, i) => event("license.updated", i + 1)))
        const seen = yield* Ref.make<ReadonlyArray<number>>([])
        const dispatcher = store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* Effect.yieldNow
          yield* queue.dispatch(events.map((e) => e.id), [])
          yield* Ref.update(seen, (ids) => [...ids, ...events.map((e) => e.id)])
        }))
        yield* Effect.all(Array.from({ length: 10 }, () => dispatcher), { concurrency: "unbounded" })
        const ids = yield* Ref.get(seen)
        assert.strictEqual(new Set(ids).size, ids.length, "an event was claimed twice")
        assert.strictEqual(ids.length, 50)
      }))

    test("due deliveries of active webhooks are claimed for a lease, once; the lease lapses; list newest first", () =>
      Effect.gen(function*() {
        const repo = yield* Ports.WebhookRepository
        const queue = yield* Ports.WebhookDeliveryQueue
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const on = yield* repo.insert(webhookDraft())
        const off = yield* repo.insert(webhookDraft({ status: "disabled" }))
        yield* outbox.append([event("license.created", 1), event("license.created", 2), event("license.created", 3)])
        const [e1, e2, e3]: ReadonlyArray<number> = yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          const [x, y, z] = events.map((e) => e.id)
          yield* queue.dispatch(events.map((e) => e.id), [
            deliveryDraft(on.id, x!),
            deliveryDraft(on.id, y!, { nextAttemptAt: T0 + MINUTE }),
            deliveryDraft(on.id, z!, { status: "delivered", nextAttemptAt: null }),
            deliveryDraft(off.id, x!)
          ])
          return [x!, y!, z!] as const
        }))
        const listed = yield* queue.list(on.id, { page: 1, perPage: 10 })
        assert.deepStrictEqual(listed.items.map((d) => d.eventId), [e3, e2, e1])
        // The backlog: every pending delivery, of active webhooks or not, due or not.
        assert.strictEqual(yield* queue.countPending, 3)
        const claimed = yield* queue.claimDue(T0, T0 + MINUTE, 10)
        assert.deepStrictEqual(claimed.map((d) => [d.webhookId, d.eventId, d.lockedUntil]), [[on.id, e1, T0 + MINUTE]])
        assert.deepStrictEqual(yield* queue.claimDue(T0 + 1, T0 + MINUTE, 10), [])
        // At T0 + MINUTE the lease of the first lapsed and the second fell due.
        const later = yield* queue.claimDue(T0 + MINUTE, T0 + 2 * MINUTE, 10)
        assert.deepStrictEqual(later.map((d) => d.eventId), [e1, e2])
        const done = yield* queue.update({ ...later[0]!, status: "delivered", attempts: 1, responseStatus: 204, responseExcerpt: "", lastAttemptAt: T0 + MINUTE, nextAttemptAt: null, lockedUntil: null })
        assert.deepStrictEqual(yield* queue.findById(on.id, done.id), done)
        assert.isUndefined(yield* queue.findById(off.id, done.id))
        assert.strictEqual(yield* queue.countPending, 2)
        assert.deepStrictEqual(yield* queue.claimDue(T0 + 10 * MINUTE, T0 + 11 * MINUTE, 10).pipe(Effect.map((ds) => ds.map((d) => d.eventId))), [e2])
        assert.deepStrictEqual(yield* outbox.readAfter(0, 10).pipe(Effect.map((es) => es.length)), 3)
      }))

    test("recording an attempt of a delivery deleted with its webhook meanwhile writes nothing and does not fail", () =>
      Effect.gen(function*() {
        const repo = yield* Ports.WebhookRepository
        const queue = yield* Ports.WebhookDeliveryQueue
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const hook = yield* repo.insert(webhookDraft())
        yield* outbox.append([event("license.created", 1)])
        yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* queue.dispatch(events.map((e) => e.id), [deliveryDraft(hook.id, events[0]!.id)])
        }))
        const [claimed] = yield* queue.claimDue(T0, T0 + MINUTE, 10)
        assert.isTrue(yield* repo.delete(hook.id))
        yield* queue.update({ ...claimed!, status: "delivered", attempts: 1, lockedUntil: null })
        assert.isUndefined(yield* queue.findById(hook.id, claimed!.id))
        assert.strictEqual((yield* queue.list(hook.id, { page: 1, perPage: 10 })).total, 0)
      }))

    test("a claimed batch's events are read in one call and its attempts recorded in one; a deleted delivery stays deleted", () =>
      Effect.gen(function*() {
        const repo = yield* Ports.WebhookRepository
        const queue = yield* Ports.WebhookDeliveryQueue
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const kept = yield* repo.insert(webhookDraft())
        const gone = yield* repo.insert(webhookDraft())
        yield* outbox.append([event("license.created", 1), event("machine.activated", 2)])
        yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(10)
          yield* queue.dispatch(
            events.map((e) => e.id),
            events.flatMap((e) => [deliveryDraft(kept.id, e.id, { type: e.type }), deliveryDraft(gone.id, e.id, { type: e.type })])
          )
        }))
        const claimed = yield* queue.claimDue(T0, T0 + MINUTE, 10)
        assert.strictEqual(claimed.length, 4)
        const events = yield* outbox.findByIds([...new Set(claimed.map((d) => d.eventId)), 999_999])
        assert.deepStrictEqual(events.map((e) => e.type).sort(), ["license.created", "machine.activated"])
        assert.deepStrictEqual(yield* outbox.findByIds([]), [])
        assert.isTrue(yield* repo.delete(gone.id))
        const [first, second] = claimed.filter((d) => d.webhookId === kept.id)
        const delivered = { ...first!, status: "delivered", attempts: 1, responseStatus: 204, responseExcerpt: "ok", lastAttemptAt: T0 + 5, nextAttemptAt: null, lockedUntil: null } as const
        const retried = { ...second!, attempts: 1, responseStatus: 500, responseExcerpt: "no", lastAttemptAt: T0 + 5, nextAttemptAt: T0 + 30_000, lockedUntil: null }
        yield* queue.recordAttempts([...claimed.filter((d) => d.webhookId === gone.id), delivered, retried])
        yield* queue.recordAttempts([])
        assert.deepStrictEqual(yield* queue.findById(kept.id, first!.id), delivered)
        assert.deepStrictEqual(yield* queue.findById(kept.id, second!.id), retried)
        assert.strictEqual((yield* queue.list(gone.id, { page: 1, perPage: 10 })).total, 0)
        // The retried one is due again at its next attempt, not before.
        assert.deepStrictEqual(yield* queue.claimDue(T0 + 29_999, T0 + MINUTE, 10), [])
        assert.deepStrictEqual((yield* queue.claimDue(T0 + 30_000, T0 + MINUTE, 10)).map((d) => d.id), [second!.id])
      }))

    test("concurrent workers never hold one delivery at once", () =>
      Effect.gen(function*() {
        const repo = yield* Ports.WebhookRepository
        const queue = yield* Ports.WebhookDeliveryQueue
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const hook = yield* repo.insert(webhookDraft())
        yield* outbox.append(Array.from({ length: 40 }, (_, i) => event("license.created", i + 1)))
        yield* store.transaction(Effect.gen(function*() {
          const events = yield* queue.claimUndispatched(100)
          yield* queue.dispatch(events.map((e) => e.id), events.map((e) => deliveryDraft(hook.id, e.id)))
        }))
        const claims = yield* Effect.all(Array.from({ length: 8 }, () => queue.claimDue(T0, T0 + MINUTE, 10)), { concurrency: "unbounded" })
        const ids = claims.flat().map((d) => d.id)
        assert.strictEqual(new Set(ids).size, ids.length, "a delivery was claimed twice")
        assert.strictEqual(ids.length, 40)
      }))
  })
}
