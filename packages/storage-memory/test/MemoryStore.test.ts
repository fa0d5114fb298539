/**
 * What the memory store promises beyond the shared storage contract (test/storage-contract): isolation while
 * transactions stay open side by side, lock waits and their interruption, deadlock detection, reserved keys,
 * commit-ordered event ids, rows nobody can change behind the store's back, and the windows that keep a
 * long-running process's event log, delivery log and outbox bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { License, Model, Ports } from "@lm/domain"
import { DeadlockDetected, MemoryStore } from "@lm/storage-memory"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, type Scope } from "effect"

const draft = (key: string, overrides: Partial<Model.LicenseDraft> = {}): Model.LicenseDraft => ({
  key,
  state: "issued",
  ...License.defaultLicenseSettings,
  activatedAt: null,
  source: "api",
  generatorId: null,
  subscriptionId: null,
  suspendedBy: null,
  createdAt: 1_000,
  updatedAt: 1_000,
  ...overrides
})

const KEY_A = "AAAA-AAAA-AAAA-AAAA"
const KEY_B = "BBBB-BBBB-BBBB-BBBB"

const test = <A, E>(title: string, body: () => Effect.Effect<A, E, MemoryStore.Services | Scope.Scope>) =>
  it.effect(title, () => Effect.provide(Effect.suspend(body), Layer.fresh(MemoryStore.layer)))

/** Runs `effect` in a transaction on a child fiber that stays open until `release` completes. */
const holdOpen = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const store = yield* Ports.Store
    const ready = yield* Deferred.make<A>()
    const release = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(
      store.transaction(Effect.gen(function*() {
        const value = yield* effect
        yield* Deferred.succeed(ready, value)
        yield* Deferred.await(release)
        return value
      }))
    )
    const value = yield* Deferred.await(ready)
    return { value, fiber, release: Deferred.succeed(release, undefined) }
  })

/** Lets every other ready fiber run for a while. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

describe("MemoryStore", () => {
  test("an open transaction's writes stay invisible to other fibers until it commits", () =>
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const existing = yield* licenses.insert(draft(KEY_A, { userId: 1 }))
      const open = yield* holdOpen(Effect.gen(function*() {
        yield* licenses.update({ ...existing, userId: 2, revision: existing.revision + 1 })
        return yield* licenses.insert(draft(KEY_B))
      }))
      assert.strictEqual((yield* licenses.findByKey(KEY_A))?.userId, 1)
      assert.isUndefined(yield* licenses.findByKey(KEY_B))
      assert.strictEqual((yield* licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc" })).total, 1)
      yield* open.release
      yield* Fiber.join(open.fiber)
      assert.strictEqual((yield* licenses.findByKey(KEY_A))?.userId, 2)
      assert.deepStrictEqual(yield* licenses.findByKey(KEY_B), open.value)
    }))

  test("locks on different licenses do not wait for each other", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      const a = yield* licenses.insert(draft(KEY_A))
      const b = yield* licenses.insert(draft(KEY_B))
      const open = yield* holdOpen(licenses.lockByKey(KEY_A))
      // While A stays locked, a transaction on B runs to its end.
      const locked = yield* store.transaction(Effect.tap(licenses.lockByKey(KEY_B), (l) => licenses.update({ ...l!, userId: 7 })))
      assert.strictEqual(locked?.id, b.id)
      assert.strictEqual((yield* licenses.findById(b.id))?.userId, 7)
      yield* open.release
      assert.strictEqual((yield* Fiber.join(open.fiber))?.id, a.id)
    }))

  test("a second lock on the same license waits for the holder and then sees its committed write", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      const a = yield* licenses.insert(draft(KEY_A, { userId: 1 }))
      const open = yield* holdOpen(Effect.gen(function*() {
        const license = (yield* licenses.lockByKey(KEY_A))!
        yield* licenses.update({ ...license, userId: 2, revision: license.revision + 1 })
      }))
      let acquired = false
      const waiter = yield* Effect.forkChild(store.transaction(Effect.tap(licenses.lockByKey(KEY_A), () => Effect.sync(() => (acquired = true)))))
      const outside = yield* Effect.forkChild(licenses.lockByKey(KEY_A))
      yield* settle
      assert.isFalse(acquired)
      assert.isUndefined(outside.pollUnsafe())
      yield* open.release
      assert.strictEqual((yield* Fiber.join(waiter))?.userId, 2)
      assert.strictEqual((yield* Fiber.join(outside))?.userId, 2)
      assert.strictEqual((yield* licenses.findById(a.id))?.revision, a.revision + 1)
    }))

  test("a write outside a transaction waits for the row's lock", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      const a = yield* licenses.insert(draft(KEY_A, { userId: 1 }))
      const open = yield* holdOpen(licenses.lockByKey(KEY_A))
      const write = yield* Effect.forkChild(licenses.update({ ...a, userId: 3 }))
      yield* settle
      assert.strictEqual((yield* licenses.findById(a.id))?.userId, 1)
      yield* open.release
      yield* Fiber.join(write)
      assert.strictEqual((yield* licenses.findById(a.id))?.userId, 3)
    }))

  test("an interrupted waiter leaves the queue; the lock passes on", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      yield* licenses.insert(draft(KEY_A))
      const open = yield* holdOpen(licenses.lockByKey(KEY_A))
      const waiter = yield* Effect.forkChild(store.transaction(licenses.lockByKey(KEY_A)))
      yield* settle
      yield* Fiber.interrupt(waiter)
      yield* open.release
      yield* Fiber.join(open.fiber)
      assert.isDefined(yield* store.transaction(licenses.lockByKey(KEY_A)))
    }))

  test("two transactions locking each other's license: one dies of a detected deadlock, the other goes on", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      yield* licenses.insert(draft(KEY_A))
      yield* licenses.insert(draft(KEY_B))
      const both = yield* Deferred.make<void>()
      let locked = 0
      const cross = (first: string, second: string) =>
        store.transaction(Effect.gen(function*() {
          yield* licenses.lockByKey(first)
          if (++locked === 2) yield* Deferred.succeed(both, undefined)
          yield* Deferred.await(both)
          return yield* licenses.lockByKey(second)
        }))
      const exits = yield* Effect.all([Effect.exit(cross(KEY_A, KEY_B)), Effect.exit(cross(KEY_B, KEY_A))], { concurrency: 2 })
      const died = exits.filter((e) => Exit.isFailure(e) && Cause.squash(e.cause) instanceof DeadlockDetected)
      assert.strictEqual(died.length, 1)
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
    }))

  test("inserting a key another open transaction inserted waits for it: LicenseExists after its commit", () =>
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const open = yield* holdOpen(licenses.insert(draft(KEY_A, { userId: 1 })))
      const second = yield* Effect.forkChild(Effect.exit(licenses.insert(draft(KEY_A, { userId: 2 }))))
      yield* settle
      assert.isUndefined(second.pollUnsafe())
      yield* open.release
      const exit = yield* Fiber.join(second)
      assert.isTrue(Exit.isFailure(exit) && (Cause.squash(exit.cause) as { _tag: string })._tag === "LicenseExists")
      assert.strictEqual((yield* licenses.findByKey(KEY_A))?.userId, 1)
    }))

  test("... and succeeds after its rollback", () =>
    Effect.gen(function*() {
      const store = yield* Ports.Store
      const licenses = yield* Ports.LicenseRepository
      const inserted = yield* Deferred.make<void>()
      const abort = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(Effect.exit(store.transaction(Effect.gen(function*() {
        yield* licenses.insert(draft(KEY_A, { userId: 1 }))
        yield* Deferred.succeed(inserted, undefined)
        yield* Deferred.await(abort)
        return yield* Effect.fail("abort" as const)
      }))))
      yield* Deferred.await(inserted)
      const second = yield* Effect.forkChild(licenses.insert(draft(KEY_A, { userId: 2 })))
      yield* settle
      yield* Deferred.succeed(abort, undefined)
      yield* Fiber.join(first)
      assert.strictEqual((yield* Fiber.join(second)).userId, 2)
      assert.strictEqual((yield* licenses.findByKey(KEY_A))?.userId, 2)
    }))

  test("event ids follow commit order; a transaction sees its own events and revocation bump", () =>
    Effect.gen(function*() {
      const outbox = yield* Ports.EventOutbox
      const store = yield* Ports.Store
      const event = (type: "license.created" | "license.revoked", n: number) => ({ type, occurredAt: n, licenseId: null, machineId: null, data: { n } })
      const open = yield* holdOpen(Effect.gen(function*() {
        yield* outbox.append([event("license.revoked", 1)])
        return { own: yield* outbox.readAfter(0, 10), seq: yield* outbox.revocationSeq }
      }))
      assert.deepStrictEqual(open.value.own.map((e) => e.data), [{ n: 1 }])
      assert.strictEqual(open.value.seq, 1)
      assert.strictEqual(yield* outbox.revocationSeq, 0)
      yield* store.transaction(outbox.append([event("license.created", 2)]))
      yield* open.release
      yield* Fiber.join(open.fiber)
      const all = yield* outbox.readAfter(0, 10)
      assert.deepStrictEqual(all.map((e) => [e.id, e.data]), [[1, { n: 2 }], [2, { n: 1 }]])
      assert.strictEqual(yield* outbox.revocationSeq, 1)
    }))

  test("claims outside a transaction die instead of handing out a claim that is already gone", () =>
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const machines = yield* Ports.MachineRepository
      const generator = yield* (yield* Ports.GeneratorRepository).insert({
        name: "g",
        charset: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
        chunkLength: 4,
        prefix: "",
        productId: null,
        defaultMaxActivations: null,
        defaultValidDays: null,
        defaultOverageStrategy: null,
        defaultIsFloating: null,
        createdAt: 0,
        updatedAt: 0
      })
      yield* licenses.insert(draft(KEY_A, { state: "pending", generatorId: generator.id }))
      const pool = yield* Effect.exit(licenses.claimFromPool(generator.id))
      const sweep = yield* Effect.exit(machines.claimExpired(0, 10))
      assert.isTrue(Exit.isFailure(pool) && Cause.hasDies(pool.cause))
      assert.isTrue(Exit.isFailure(sweep) && Cause.hasDies(sweep.cause))
    }))

  test("updating a row that does not exist is a defect", () =>
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const license = yield* licenses.insert(draft(KEY_A))
      yield* licenses.delete(license.id)
      const exit = yield* Effect.exit(licenses.update(license))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
      assert.isUndefined(yield* licenses.findByKey(KEY_A))
    }))

  test("the store keeps its own copy: changing what was written or read does not change it", () =>
    Effect.gen(function*() {
      const licenses = yield* Ports.LicenseRepository
      const meta = { tags: ["a"] }
      const written = yield* licenses.insert(draft(KEY_A, { meta }))
      meta.tags.push("b")
      const read = (yield* licenses.findByKey(KEY_A))!
      assert.deepStrictEqual(read.meta, { tags: ["a"] })
      assert.throws(() => (read.meta["tags"] as Array<string>).push("c"))
      assert.deepStrictEqual(written.meta, { tags: ["a"] })
    }))

  it.effect("each build of the layer is a separate, empty store", () =>
    Effect.gen(function*() {
      const insert = Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        return yield* licenses.insert(draft(KEY_A))
      })
      const first = yield* Effect.provide(insert, MemoryStore.layer)
      const second = yield* Effect.provide(Effect.exit(insert), MemoryStore.layer)
      assert.strictEqual(first.key, KEY_A)
      assert.isTrue(Exit.isSuccess(second))
    }))

  it.effect("the event log holds the newest activityWindow entries, so a long-running process keeps a bounded log", () =>
    Effect.gen(function*() {
      const log = yield* Ports.ActivityLog
      const entry = (i: number): Model.ActivityEntry => ({
        kind: "validate",
        licenseId: i < 1_500 ? 1 : 2,
        licenseKey: KEY_A,
        machineId: null,
        fingerprint: null,
        ipAddress: null,
        appVersion: null,
        result: "valid",
        at: i
      })
      for (let batch = 0; batch < 25; batch++) yield* log.record(Array.from({ length: 100 }, (_, j) => entry(batch * 100 + j)))
      assert.strictEqual(yield* log.count({}), 1_000)
      assert.strictEqual(yield* log.count({ licenseId: 1 }), 0, "license 1's entries were the oldest: all dropped")
      assert.strictEqual(yield* log.count({ licenseId: 2 }), 1_000)
      // The entries held are the newest: 1,500 to 2,499.
      assert.strictEqual(yield* log.prune(1_500, 10_000), 0)
      assert.strictEqual(yield* log.prune(2_000, 10_000), 500)
      assert.strictEqual(yield* log.count({ licenseId: 2 }), 500)
      // The window keeps working after a prune.
      yield* log.record(Array.from({ length: 700 }, (_, j) => entry(3_000 + j)))
      assert.strictEqual(yield* log.count({}), 1_000)
      assert.strictEqual(yield* log.prune(2_300, 10_000), 100, "the 200 oldest left the window: 2,200 on are held")
    }).pipe(Effect.provide(MemoryStore.layerWith({ activityWindow: 1_000 }))))

  it.effect("the delivery log holds the newest deliveryWindow finished deliveries; pending ones are never dropped", () =>
    Effect.gen(function*() {
      const repo = yield* Ports.WebhookRepository
      const queue = yield* Ports.WebhookDeliveryQueue
      const store = yield* Ports.Store
      const outbox = yield* Ports.EventOutbox
      const hook = yield* repo.insert({
        name: "hook",
        url: "https://hooks.example.com/lm",
        events: ["*"],
        status: "active",
        sealedSecret: "lm-sealed:v1:00000000:c2VhbGVk",
        failingSince: null,
        createdAt: 0,
        updatedAt: 0
      })
      yield* outbox.append(Array.from({ length: 1_600 }, (_, i) => ({
        type: "license.created" as const,
        occurredAt: 0,
        licenseId: null,
        machineId: null,
        data: { n: i }
      })))
      yield* store.transaction(Effect.gen(function*() {
        const events = yield* queue.claimUndispatched(2_000)
        yield* queue.dispatch(events.map((e) => e.id), events.map((e) => ({
          webhookId: hook.id,
          eventId: e.id,
          type: e.type,
          status: "pending" as const,
          attempts: 0,
          responseStatus: null,
          responseExcerpt: null,
          lastAttemptAt: null,
          nextAttemptAt: 0,
          lockedUntil: null,
          createdAt: 0
        })))
      }))
      const held = (page = 1) => queue.list(hook.id, { page, perPage: 2_000 }).pipe(Effect.map((p) => p.items))
      const all = yield* held()
      assert.strictEqual(all.length, 1_600)
      // The oldest 1,500 are attempted in batches of 100 (delivered, or failed for good); the newest 100 stay pending.
      const oldest = [...all].sort((a, b) => a.id - b.id).slice(0, 1_500)
      for (let i = 0; i < 1_500; i += 100) {
        yield* queue.recordAttempts(oldest.slice(i, i + 100).map((d, j) => ({
          ...d,
          status: j % 10 === 0 ? "failed" as const : "delivered" as const,
          attempts: 1,
          lastAttemptAt: 1,
          nextAttemptAt: null
        })))
      }
      const kept = yield* held()
      assert.strictEqual(kept.filter((d) => d.status !== "pending").length, 1_000, "the window of finished ones")
      assert.strictEqual(kept.filter((d) => d.status === "pending").length, 100, "pending ones are never dropped")
      // The finished ones held are the newest: the first 500 to finish are gone.
      assert.deepStrictEqual(
        kept.filter((d) => d.status !== "pending").map((d) => d.id).sort((a, b) => a - b),
        oldest.slice(500).map((d) => d.id)
      )
      assert.isUndefined(yield* queue.findById(hook.id, oldest[0]!.id))
    }).pipe(Effect.provide(MemoryStore.layerWith({ deliveryWindow: 1_000 }))))

  it.effect("the outbox holds the newest outboxWindow events once they are fanned out; an event not fanned out yet is never dropped", () =>
    Effect.gen(function*() {
      const queue = yield* Ports.WebhookDeliveryQueue
      const store = yield* Ports.Store
      const outbox = yield* Ports.EventOutbox
      const append = (from: number, count: number) =>
        outbox.append(Array.from({ length: count }, (_, i) => ({
          type: "license.created" as const,
          occurredAt: 0,
          licenseId: null,
          machineId: null,
          data: { n: from + i }
        })))
      /** Fans out what is not fanned out yet (no webhook: no deliveries), skipping events another transaction holds. */
      const fanOut = store.transaction(Effect.gen(function*() {
        const events = yield* queue.claimUndispatched(100_000)
        yield* queue.dispatch(events.map((e) => e.id), [])
        return events.map((e) => e.id)
      }))
      const held = Effect.map(outbox.readAfter(0, 100_000), (events) => events.map((e) => e.id))
      for (let n = 0; n < 2_500; n += 500) yield* append(n, 500)
      assert.strictEqual((yield* held).length, 2_500, "nothing is fanned out yet: every event is held")
      // Event 1's fan-out is in progress in another transaction while the rest are fanned out.
      const first = yield* holdOpen(Effect.flatMap(Ports.WebhookDeliveryQueue, (q) => q.claimUndispatched(1)))
      assert.deepStrictEqual(first.value.map((e) => e.id), [1])
      assert.strictEqual((yield* fanOut).length, 2_499)
      const kept = yield* held
      assert.strictEqual(kept.length, 1_001, "the newest 1,000 and event 1, past the window but not fanned out")
      assert.deepStrictEqual(kept.slice(0, 2), [1, 1_501])
      assert.deepStrictEqual((yield* outbox.findById(1))?.data, { n: 0 })
      assert.isUndefined(yield* outbox.findById(2))
      assert.deepStrictEqual((yield* outbox.findByIds([1, 2, 1_500, 1_501])).map((e) => e.id).sort((a, b) => a - b), [1, 1_501])
      assert.deepStrictEqual((yield* outbox.readAfter(1, 2)).map((e) => e.id), [1_501, 1_502])
      // That transaction ends without fanning it out: the next fan-out takes it, with its data; then it may go.
      yield* first.release
      yield* Fiber.join(first.fiber)
      const later = yield* store.transaction(Effect.flatMap(queue.claimUndispatched(10), (events) =>
        Effect.as(queue.dispatch(events.map((e) => e.id), []), events)))
      assert.deepStrictEqual(later.map((e) => [e.id, e.data]), [[1, { n: 0 }]])
      assert.strictEqual((yield* held).length, 1_000)
      assert.isUndefined(yield* outbox.findById(1))
      // However many more come, the outbox stays at the window once they are fanned out.
      for (let n = 2_500; n < 10_000; n += 500) {
        yield* append(n, 500)
        yield* fanOut
      }
      const last = yield* held
      assert.strictEqual(last.length, 1_000)
      assert.deepStrictEqual([last[0], last.at(-1)], [9_001, 10_000])
      // Ids go on from the last one given.
      yield* append(10_000, 1)
      assert.deepStrictEqual((yield* outbox.readAfter(10_000, 10)).map((e) => [e.id, e.data]), [[10_001, { n: 10_000 }]])
    }).pipe(Effect.provide(MemoryStore.layerWith({ outboxWindow: 1_000 }))))
})
