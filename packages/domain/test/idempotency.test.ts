/**
 * Idempotent management writes (CONTRACT §16) through the domain's `Idempotency` on the memory store, with the
 * TestClock: a repeat replays the first answer, a repeat while the first runs is 409, another request 422, an
 * answer is kept 24 h and then the key is free again, a failed or 5xx answer is not kept.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Idempotency, IdempotencyRules } from "@lm/domain"
import { onEngine } from "./engine.js"

const request = { apiKeyId: 1, key: "order-42", requestHash: "h1" }
const answerOf = (status: number, body = `{"n":${status}}`) => ({ status, contentType: "application/json", body })

/** An answer that counts how often it ran. */
const counted = (status: number) => {
  const runs = { count: 0 }
  return { runs, answer: Effect.sync(() => answerOf(status, `{"run":${++runs.count}}`)) }
}

describe("Idempotency", () => {
  it.effect("runs a request once; a repeat replays its answer, another request with the key is 422", () =>
    onEngine(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const { runs, answer } = counted(201)
      expect(yield* idempotency.run(request, answer)).toEqual({ answer: answerOf(201, `{"run":1}`), replayed: false })
      expect(yield* idempotency.run(request, answer)).toEqual({ answer: answerOf(201, `{"run":1}`), replayed: true })
      const reused = yield* Effect.flip(idempotency.run({ ...request, requestHash: "h2" }, answer))
      expect(reused).toMatchObject({ code: "idempotency_key_reused", status: 422 })
      expect(runs.count).toBe(1)
    })))

  it.effect("a repeat while the first runs is 409 idempotency_key_in_use; then it replays", () =>
    onEngine(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(idempotency.run(request, Effect.as(Deferred.await(gate), answerOf(201))))
      yield* Effect.yieldNow
      const inUse = yield* Effect.flip(idempotency.run(request, Effect.succeed(answerOf(200))))
      expect(inUse).toMatchObject({ code: "idempotency_key_in_use", status: 409 })
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(first)).replayed).toBe(false)
      expect(yield* idempotency.run(request, Effect.succeed(answerOf(200)))).toEqual({ answer: answerOf(201), replayed: true })
    })))

  it.effect("an answer is kept for 24 hours; after that the key runs a request again", () =>
    onEngine(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const { runs, answer } = counted(201)
      yield* idempotency.run(request, answer)
      yield* TestClock.adjust(IdempotencyRules.retentionMillis - 1)
      expect((yield* idempotency.run(request, answer)).replayed).toBe(true)
      yield* TestClock.adjust(1)
      expect(yield* idempotency.run({ ...request, requestHash: "h2" }, answer)).toEqual({
        answer: answerOf(201, `{"run":2}`),
        replayed: false
      })
      expect(runs.count).toBe(2)
    })))

  it.effect("a failed request, a 5xx answer or an abandoned claim leaves the key free for a retry", () =>
    onEngine(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      yield* Effect.flip(idempotency.run(request, Effect.fail("boom")))
      expect((yield* idempotency.run(request, Effect.succeed(answerOf(503)))).replayed).toBe(false)
      expect(yield* idempotency.run(request, Effect.succeed(answerOf(200)))).toEqual({ answer: answerOf(200), replayed: false })
      // A claim whose process died (the request never ends) holds the key for the running lease only.
      const stuck = yield* Effect.forkChild(idempotency.run({ ...request, key: "stuck" }, Effect.never))
      yield* Effect.yieldNow
      yield* TestClock.adjust(IdempotencyRules.runningLeaseMillis)
      expect(yield* idempotency.run({ ...request, key: "stuck" }, Effect.succeed(answerOf(201)))).toEqual({
        answer: answerOf(201),
        replayed: false
      })
      yield* Fiber.interrupt(stuck)
    })))

  it.effect("a key that is not 1 to 255 printable ASCII characters is refused before anything runs", () =>
    onEngine(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      for (const key of ["", "x".repeat(256), "caf\u00e9", "tab\there"]) {
        const refused = yield* Effect.flip(idempotency.run({ ...request, key }, Effect.die("must not run")))
        expect(refused).toMatchObject({ code: "rest_invalid_param", params: { "Idempotency-Key": expect.any(String) } })
      }
    })))
})
