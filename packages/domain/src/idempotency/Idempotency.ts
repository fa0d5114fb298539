/**
 * Idempotent management writes (CONTRACT §16): {@link Idempotency.run} runs a request once per API key and
 * idempotency key, keeps its answer for 24 h in the store (so it holds across processes) and gives a repeat that
 * answer again; another request with the same key is 422, a repeat while the first runs 409.
 */
import { Clock, Context, Effect, Exit, Layer } from "effect"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import { IdempotencyKeyInUse, IdempotencyKeyReused } from "./errors.js"
import { header, held, keeps, keyPattern, retentionMillis, runningLeaseMillis } from "./idempotencyKey.js"
import type { IdempotentAnswer } from "./model.js"
import { IdempotencyRepository } from "./ports.js"

/** A request that carries an idempotency key. */
export interface IdempotentRequest {
  readonly apiKeyId: number
  /** The `Idempotency-Key` as sent. */
  readonly key: string
  /** A digest of the request's method, path and body (the adapter computes it). */
  readonly requestHash: string
}

/** The answer to send, and whether it is a replay of the first (`Idempotent-Replayed: true`). */
export interface IdempotentResult {
  readonly answer: IdempotentAnswer
  readonly replayed: boolean
}

/** The errors {@link Idempotency.run} adds to the request's own. */
export type IdempotencyError = IdempotencyKeyInUse | IdempotencyKeyReused | InvalidParam | StorageUnavailable

/** How often expired records are deleted, at most (by whichever request comes then). */
const pruneEveryMillis = 60_000

export class Idempotency extends Context.Service<Idempotency, {
  /**
   * Runs `request` unless its key is held: a new key (or one whose record expired) runs it and keeps its answer
   * (unless {@link keeps} says not: then, as when it fails or is interrupted, the claim is released). A held key
   * replays, or refuses with 409 `idempotency_key_in_use` / 422 `idempotency_key_reused`.
   */
  readonly run: <E, R>(
    request: IdempotentRequest,
    answer: Effect.Effect<IdempotentAnswer, E, R>
  ) => Effect.Effect<IdempotentResult, E | IdempotencyError, R>
}>()("@lm/domain/Idempotency") {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function*() {
      const records = yield* IdempotencyRepository
      let prunedAt = 0
      const pruneNow = (now: number) =>
        now - prunedAt < pruneEveryMillis ? Effect.void : Effect.suspend(() => {
          prunedAt = now
          return Effect.asVoid(records.prune(now))
        })
      const claim = Effect.fnUntraced(function*(request: IdempotentRequest) {
        // A record that expires between the claim and the read is gone: claim again.
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          yield* pruneNow(now)
          const holder = yield* records.claim({ ...request, runningUntil: now + runningLeaseMillis }, now)
          if (holder === undefined) return undefined
          const outcome = held(holder, request.requestHash)
          if (outcome._tag === "Replay") return outcome.answer
          if (outcome._tag === "Reused") {
            return yield* new IdempotencyKeyReused({
              message: `The ${header} ${JSON.stringify(request.key)} was already used with another request (method, path or body); use a new key for a new request.`
            })
          }
          return yield* new IdempotencyKeyInUse({
            message: `A request with this ${header} is still being processed; retry once it has finished.`
          })
        }
      })
      return Idempotency.of({
        run: (request, answer) =>
          Effect.gen(function*() {
            if (!keyPattern.test(request.key)) {
              return yield* invalidParam(header, "must be 1 to 255 printable ASCII characters")
            }
            const replay = yield* claim(request)
            if (replay !== undefined) return { answer: replay, replayed: true }
            const { apiKeyId, key, requestHash } = request
            // Kept or released whatever happens (uninterruptibly): a failure to record it leaves the claim to expire.
            const settle = (exit: Exit.Exit<IdempotentAnswer, unknown>) =>
              Effect.ignore(
                Exit.isSuccess(exit) && keeps(exit.value)
                  ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
                    records.complete(apiKeyId, key, requestHash, exit.value, now + retentionMillis))
                  : records.release(apiKeyId, key, requestHash),
                { log: "Warn", message: "An idempotency key's answer could not be recorded" }
              )
            const answered = yield* Effect.onExit(answer, settle)
            return { answer: answered, replayed: false }
          })
      })
    })
  )
}
