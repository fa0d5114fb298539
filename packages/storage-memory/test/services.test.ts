/**
 * The domain's services running on the memory store: pool draws, seats, the sweep, revocation and the log, and
 * webhook delivery of events past the outbox's window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Engine, Generators, Licenses, Licensing, Machines, MasterKey, Ports, Random, Services, Sweeper, Webhooks } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const T0 = Date.UTC(2026, 0, 1)

const engine = Engine.services().pipe(Layer.provideMerge(Layer.mergeAll(Layer.fresh(MemoryStore.layer), Random.layerCrypto)))

/**
 * Runs `body` on the services from `T0`. The clock is set before the services start: moving a TestClock far
 * ahead afterwards would replay every tick of the activity recorder's periodic flush.
 */
const fromT0 = <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.andThen(TestClock.setTime(T0), body)

describe("domain services on the memory store", () => {
  it.effect("concurrent creates from a generator draw distinct pool keys; deleting the generator empties the pool", () =>
    fromT0(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Pro", defaultMaxActivations: 2 })
      const pool = yield* generators.generate(generator.id, 50, {})
      assert.strictEqual(pool.length, 50)
      assert.isTrue(pool.every((view) => view.status === "pending"))
      const created = yield* Effect.all(Array.from({ length: 10 }, () => licenses.create({ generatorId: generator.id })), {
        concurrency: "unbounded"
      })
      const keys = created.map((view) => view.license.key)
      assert.strictEqual(new Set(keys).size, 10)
      const poolKeys = new Set(pool.map((view) => view.license.key))
      assert.isTrue(keys.every((key) => poolKeys.has(key)))
      assert.isTrue(created.every((view) => view.license.state === "issued" && view.license.maxActivations === 2))
      assert.strictEqual((yield* generators.get(generator.id)).poolSize, 40)
      assert.deepStrictEqual(yield* generators.delete(generator.id), { id: generator.id, poolKeysDeleted: 40 })
      const left = yield* licenses.list({ page: 1, perPage: 100 })
      assert.strictEqual(left.total, 10)
    }).pipe(Effect.provide(engine))))

  it.effect("a floating lease that runs out is swept; the freed seat can be taken again", () =>
    fromT0(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const sweeper = yield* Sweeper
      const { license } = yield* licenses.create({ maxActivations: 1, isFloating: true, leaseDuration: 60 })
      const first = yield* licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-1" }, ipAddress: null })
      assert.isTrue(first.created)
      const refused = yield* Effect.flip(licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-2" }, ipAddress: null }))
      assert.strictEqual(refused._tag, "MachineLimitExceeded")
      assert.strictEqual((yield* licenses.list({ page: 1, perPage: 10, status: "active" })).total, 1)

      yield* TestClock.adjust("61 seconds")
      assert.strictEqual(yield* sweeper.sweepOnce, 1)
      assert.strictEqual(yield* sweeper.sweepOnce, 0)
      const machine = yield* (yield* Machines).get(first.machine.id)
      assert.deepStrictEqual([machine.status, machine.deactivationReason], ["inactive", "lease_expired"])
      assert.strictEqual((yield* licenses.list({ page: 1, perPage: 10, status: "inactive" })).total, 1)
      const second = yield* licensing.activate({ licenseKey: license.key, facts: { fingerprint: "fp-2" }, ipAddress: null })
      assert.isTrue(second.created)
    }).pipe(Effect.provide(engine))))

  it.effect("revoking advances the revocation seq; client calls reach the activity log", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const licenseId = yield* Effect.gen(function*() {
        const licenses = yield* Licenses
        const licensing = yield* Licensing
        const outbox = yield* Ports.EventOutbox
        const { license } = yield* licenses.create({})
        const before = yield* outbox.revocationSeq
        yield* licenses.update(license.key, { userId: 5 })
        assert.strictEqual(yield* outbox.revocationSeq, before)
        yield* licenses.revoke(license.key)
        assert.isTrue((yield* outbox.revocationSeq) > before)
        const validation = yield* licensing.validate({ licenseKey: license.key, ipAddress: null })
        assert.strictEqual(validation.validation.code, "license_revoked")
        return license.id
      }).pipe(Effect.provide(Engine.services()))
      // Closing the services flushed the buffered activity to the log, which outlives them.
      const log = yield* Ports.ActivityLog
      assert.strictEqual(yield* log.count({ licenseId }), 1)
    }).pipe(Effect.provide(Layer.mergeAll(Layer.fresh(MemoryStore.layer), Random.layerCrypto))))

  it.effect("an event a webhook has not received outlives the outbox's window: its retry and a redelivery send it", () => {
    // The receiver: what it was sent, and the status it answers.
    const received: Array<{ readonly id: number; readonly type: string; readonly data: unknown }> = []
    const receiver = { status: 500 }
    const sender = {
      send: (request: Services.WebhookRequest) =>
        Effect.sync(() => {
          received.push(JSON.parse(request.body))
          return { _tag: "Response", status: receiver.status, excerpt: "" } as const
        })
    }
    const webhookEngine = Webhooks.layer.pipe(
      Layer.provideMerge(Layer.succeed(Services.WebhookSender, sender)),
      Layer.provideMerge(MasterKey.layerEphemeral),
      Layer.provideMerge(Random.layerCrypto),
      Layer.provideMerge(MemoryStore.layerWith({ outboxWindow: 1_000, deliveryWindow: 1_000 }))
    )
    return fromT0(Effect.gen(function*() {
      const webhooks = yield* Webhooks
      const outbox = yield* Ports.EventOutbox
      const append = (type: "license.created" | "machine.activated", count: number) =>
        outbox.append(Array.from({ length: count }, (_, i) => ({ type, occurredAt: T0, licenseId: null, machineId: null, data: { n: i } })))
      const held = Effect.map(outbox.readAfter(0, 100_000), (events) => events.length)
      const { webhook } = yield* webhooks.create({ url: "https://hooks.example.com/lm", events: ["license.created"] })
      yield* append("license.created", 1)
      assert.strictEqual(yield* webhooks.dispatchOnce, 1)
      // The receiver is down: the first attempt fails, the next is due in 30 s.
      yield* webhooks.deliverDue
      const [delivery] = (yield* webhooks.deliveries(webhook.id, { page: 1, perPage: 10 })).items
      assert.deepStrictEqual([delivery!.eventId, delivery!.status], [1, "pending"])
      // 1,500 events the webhook does not take push event 1 past the window; it stays, its delivery pending.
      yield* append("machine.activated", 1_500)
      assert.strictEqual(yield* webhooks.dispatchOnce, 1_500)
      assert.strictEqual(yield* held, 1_001, "the newest 1,000 and event 1")
      receiver.status = 200
      yield* TestClock.adjust("30 seconds")
      yield* webhooks.deliverDue
      assert.deepStrictEqual(received.map((body) => [body.id, body.type, body.data]), [[1, "license.created", { n: 0 }], [1, "license.created", { n: 0 }]])
      // Delivered, and still in the delivery log: a redelivery sends it again.
      yield* webhooks.redeliver(webhook.id, delivery!.id)
      yield* webhooks.deliverDue
      assert.deepStrictEqual(received.map((body) => body.id), [1, 1, 1])
      // Once its delivery has left the delivery log (1,200 newer ones finished), nothing needs event 1.
      yield* append("license.created", 1_200)
      yield* webhooks.dispatchOnce
      yield* webhooks.deliverDue
      assert.strictEqual(received.length, 1_203)
      assert.isUndefined(yield* webhooks.deliveries(webhook.id, { page: 1, perPage: 2_000 }).pipe(
        Effect.map((page) => page.items.find((d) => d.id === delivery!.id))
      ))
      assert.isUndefined(yield* outbox.findById(1))
      assert.strictEqual(yield* held, 1_000)
    }).pipe(Effect.provide(webhookEngine)))
  })
})
