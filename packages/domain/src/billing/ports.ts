/** What the billing feature needs from a store: the record of every provider event received. */
import { Context } from "effect"
import type { Op, PageRequest, Page } from "../shared/ports.js"
import type { BillingProvider } from "../subscriptions/model.js"
import type { BillingEvent, BillingEventDraft, BillingEventOutcome } from "./model.js"

/** Filters of GET /billing/events. */
export interface BillingEventQuery extends PageRequest {
  readonly outcome?: BillingEventOutcome | undefined
  readonly provider?: BillingProvider | undefined
}

/**
 * Received provider events (CONTRACT §20). A provider's event id is recorded once with a real outcome (unique per
 * provider), whichever process receives it, in the transaction of the move it makes; later receipts of it are
 * recorded as `duplicate` beside it.
 */
export class BillingEventRepository extends Context.Service<BillingEventRepository, {
  /**
   * Records an event. An outcome other than `duplicate` claims the provider's event id: undefined when it is
   * already claimed (waiting for a transaction that holds the claim to end, as a unique key does).
   */
  readonly record: (draft: BillingEventDraft) => Op<BillingEvent | undefined>
  /** The provider timestamp of the newest event applied to the subscription (null for none). */
  readonly lastAppliedAt: (subscriptionId: number) => Op<number | null>
  /** Newest first. */
  readonly list: (query: BillingEventQuery) => Op<Page<BillingEvent>>
}>()("@lm/domain/BillingEventRepository") {}
