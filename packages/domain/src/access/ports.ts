/** What the access feature needs from a store: API keys, and the rate-limit buckets processes share. */
import { Context } from "effect"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { ApiKey, ApiKeyDraft } from "./model.js"

export class ApiKeyRepository extends Context.Service<ApiKeyRepository, {
  readonly insert: (draft: ApiKeyDraft) => Op<ApiKey>
  readonly findByConsumerKeyHash: (hash: string) => Op<ApiKey | undefined>
  readonly list: (page: PageRequest) => Op<Page<ApiKey>>
  /** Returns whether a key was deleted (the bootstrap rule's replacement of a changed key: nothing remembered). */
  readonly delete: (id: number) => Op<boolean>
  /**
   * Deletes a key and, in the same transaction, remembers its consumer key hash as deleted by an administrator
   * (see {@link wasDeleted}); returns whether a key was deleted.
   */
  readonly deleteRemembered: (id: number, at: number) => Op<boolean>
  /** Whether a key with this consumer key hash was deleted through {@link deleteRemembered}. */
  readonly wasDeleted: (consumerKeyHash: string) => Op<boolean>
  readonly count: Op<number>
  readonly touch: (id: number, at: number) => Op<void>
}>()("@lm/domain/ApiKeyRepository") {}

/** One bucket's share of a batch: advance its `tat` by `cost` ms (see `rateLimit.ts`). */
export interface RateLimitAdvance {
  readonly key: string
  readonly cost: number
}

/**
 * Rate-limit buckets shared by the processes of one deployment (PostgreSQL, Redis). `advance` applies a batch
 * atomically per key, `tat = max(tat, now) + cost` (an unknown key starts at `now`), and returns the new `tat`s
 * in order; a key whose `tat` has passed is a full bucket and may be forgotten. The default (`undefined`) shares
 * nothing: each process limits on its own, which is exact for a single process.
 */
export const SharedRateLimits = Context.Reference<{
  readonly advance:
    | ((batch: ReadonlyArray<RateLimitAdvance>, now: number) => Op<ReadonlyArray<number>>)
    | undefined
}>("@lm/domain/SharedRateLimits", {
  defaultValue: () => ({ advance: undefined })
})
