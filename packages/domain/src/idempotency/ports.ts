/** What the idempotency feature needs from a store: the records of idempotency keys, shared by every process. */
import { Context } from "effect"
import type { Op } from "../shared/ports.js"
import type { IdempotencyClaim, IdempotencyRecord, IdempotentAnswer } from "./model.js"

export class IdempotencyRepository extends Context.Service<IdempotencyRepository, {
  /**
   * Atomically records a running claim for `(apiKeyId, key)` unless a record that has not expired at `now` holds it
   * (an expired one is replaced). Answers `undefined` when the claim was recorded, else the record that holds the key.
   * Of several claims at once (across processes too), exactly one is recorded.
   */
  readonly claim: (claim: IdempotencyClaim, now: number) => Op<IdempotencyRecord | undefined>
  /** Records the answer of the running claim of `(apiKeyId, key)` for `requestHash`, kept until `expiresAt`. */
  readonly complete: (
    apiKeyId: number,
    key: string,
    requestHash: string,
    answer: IdempotentAnswer,
    expiresAt: number
  ) => Op<void>
  /** Removes the running claim of `(apiKeyId, key)` for `requestHash` (its request ended without an answer to keep). */
  readonly release: (apiKeyId: number, key: string, requestHash: string) => Op<void>
  /** Deletes the records expired at `now`; answers how many. */
  readonly prune: (now: number) => Op<number>
}>()("@lm/domain/IdempotencyRepository") {}
