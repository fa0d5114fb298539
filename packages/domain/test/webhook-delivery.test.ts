/**
 * Background webhook delivery on the memory store under the TestClock: an idle server delivers every due
 * delivery at once; while requests arrive, delivery yields to them (rests between batches) and still delivers
 * everything.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MasterKey, Ports, Services } from "@lm/domain"
import { engine } from "./engine.js"
import { seededRandom, T0 } from "./fixtures.js"

/** A webhook engine whose sender answers 200 at once, counting what it sends; `requests` plays the HTTP server. */
const deliveryEngine = () => {
  const sent: Array<string> = []
  const load = { requests: 0, perSend: 0 }
  const sender = {
    send: (request: Services.WebhookRequest) =>
      Effect.sync(() => {
        sent.push(request.headers["x-lm-delivery"] ?? "")
        load.requests += load.perSend
        return { _tag: "Response", status: 200, excerpt: "" } as const
      })
  }
  const layer = Services.Webhooks.layer.pipe(
    Layer.provideMerge(Layer.succeed(Services.WebhookSettings, { ...Services.WebhookSettings.defaultValue(), batch: 2, dispatchBatch: 3 })),
    Layer.provideMerge(Layer.succeed(Services.RequestLoad, { busyShare: 0.1, requestsStarted: () => load.requests })),
    Layer.provideMerge(Layer.succeed(Services.WebhookSender, sender)),
    Layer.provideMerge(MasterKey.layerEphemeral),
    Layer.provideMerge(seededRandom(2)),
    Layer.provideMerge(engine())
  )
  return { sent, load, layer }
}

/** A webhook on `*` and six events in the outbox, not fanned out yet. */
const sixEvents = Effect.gen(function*() {
  const webhooks = yield* Services.Webhooks
  yield* webhooks.create({ url: "https://hooks.example.com/lm", events: ["*"] })
  const outbox = yield* Ports.EventOutbox
  yield* outbox.append(Array.from({ length: 6 }, (_, i) => ({
    type: "license.created" as const,
    occurredAt: T0,
    licenseId: null,
    machineId: null,
    data: { n: i }
  })))
  return webhooks
})

/** The same six events fanned out: six deliveries due now. */
const sixDue = Effect.tap(sixEvents, (webhooks) => Effect.map(webhooks.dispatchOnce, (n) => expect(n).toBe(6)))

/** Runs `body` on a fresh delivery engine, the TestClock set before the engine starts (as `onEngine` does). */
const onDeliveryEngine = <A, E>(
  body: (engine: ReturnType<typeof deliveryEngine>) => Effect.Effect<A, E, Services.Webhooks | Ports.EventOutbox>
) => {
  const engine = deliveryEngine()
  return TestClock.setTime(T0).pipe(Effect.andThen(Effect.provide(body(engine), engine.layer)))
}

/**
 * What a round forked while every send counts as a request does with six deliveries, two a batch: a batch under
 * the TestClock takes no time, counted as 1 ms, so each rest is 9 ms; the round ends after the rest that follows
 * its last full batch. `afterFirst` and `afterSecond` check more after those batches.
 */
const restsBetweenBatches = (
  sent: ReadonlyArray<string>,
  round: Fiber.Fiber<number, unknown>,
  checks: { readonly afterFirst?: Effect.Effect<void, unknown>; readonly afterSecond?: Effect.Effect<void, unknown> } = {}
) =>
  Effect.gen(function*() {
    expect(sent.length).toBe(2)
    if (checks.afterFirst !== undefined) yield* checks.afterFirst
    yield* TestClock.adjust("8 millis")
    expect(sent.length).toBe(2)
    yield* TestClock.adjust("1 millis")
    expect(sent.length).toBe(4)
    if (checks.afterSecond !== undefined) yield* checks.afterSecond
    yield* TestClock.adjust("9 millis")
    expect(sent.length).toBe(6)
    yield* TestClock.adjust("9 millis")
    expect(yield* Fiber.join(round)).toBe(6)
    expect(new Set(sent).size).toBe(6)
  })

describe("background delivery", () => {
  it.effect("an idle server sends every due delivery in one round, a batch after the other", () =>
    onDeliveryEngine(({ sent }) =>
      Effect.gen(function*() {
        const webhooks = yield* sixDue
        expect(yield* webhooks.deliverDue).toBe(6)
        expect(new Set(sent).size).toBe(6)
      })
    ))

  it.effect("while requests arrive, delivery rests between batches (nine times a batch's time) and still sends everything", () =>
    onDeliveryEngine(({ load, sent }) =>
      Effect.gen(function*() {
        const webhooks = yield* sixDue
        load.perSend = 1
        const round = yield* Effect.forkChild(webhooks.deliverDue)
        yield* Effect.yieldNow
        yield* restsBetweenBatches(sent, round)
      })
    ))

  it.effect("the background job fans out and delivers a batch of each per step, resting between steps while requests arrive", () =>
    onDeliveryEngine(({ load, sent }) =>
      Effect.gen(function*() {
        const webhooks = yield* sixEvents
        load.perSend = 1
        const round = yield* Effect.forkChild(webhooks.run)
        yield* Effect.yieldNow
        const logged = Effect.map(webhooks.list({ page: 1, perPage: 10 }), (page) => page.items[0]!.id).pipe(
          Effect.flatMap((id) => webhooks.deliveries(id, { page: 1, perPage: 10 })),
          Effect.map((page) => page.total)
        )
        // Step 1: three events fanned out, two of their deliveries sent although three events still wait.
        yield* restsBetweenBatches(sent, round, {
          afterFirst: Effect.map(logged, (n) => expect(n).toBe(3)),
          afterSecond: Effect.map(logged, (n) => expect(n).toBe(6))
        })
      })
    ))
})
