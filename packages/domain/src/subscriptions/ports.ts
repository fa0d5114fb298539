/** What the subscriptions feature needs: subscriptions and their renewal records (a store), and a payment gateway. */
import { Context, Effect } from "effect"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { SubscriptionExists } from "./errors.js"
import type {
  BillingPeriod,
  BillingProvider,
  RenewalDraft,
  RenewalRecord,
  RenewalStatus,
  Subscription,
  SubscriptionDraft,
  SubscriptionStatus
} from "./model.js"

/** Filters of GET /subscriptions. */
export interface SubscriptionQuery extends PageRequest {
  readonly status?: SubscriptionStatus | undefined
  readonly userId?: number | undefined
  readonly productId?: number | undefined
}

/**
 * Subscriptions and their renewal records (CONTRACT §10). Each write takes `dueAt`, the earliest moment the
 * clock has a move for the subscription as the domain's `Subscription.nextDueAt` computes it (null for none):
 * stores keep it indexed so the period-end job finds due work without a scan.
 */
export class SubscriptionRepository extends Context.Service<SubscriptionRepository, {
  /** Fails with `SubscriptionExists` when another subscription has its `externalId` at its provider. */
  readonly insert: (draft: SubscriptionDraft, dueAt: number | null) => Op<Subscription, SubscriptionExists>
  readonly findById: (id: number) => Op<Subscription | undefined>
  /** The subscription with this `externalId` at this billing provider. */
  readonly findByExternalId: (provider: BillingProvider, externalId: string) => Op<Subscription | undefined>
  /** Loads a subscription and holds its lock until the transaction ends (FOR UPDATE). */
  readonly lockById: (id: number) => Op<Subscription | undefined>
  /** Oldest first. */
  readonly list: (query: SubscriptionQuery) => Op<Page<Subscription>>
  /**
   * Writes every field of the subscription (its revision already advanced by the domain); fails with
   * `SubscriptionExists` when another subscription has its `externalId` at its provider.
   */
  readonly update: (subscription: Subscription, dueAt: number | null) => Op<Subscription, SubscriptionExists>
  /**
   * Claims up to `limit` subscriptions whose `dueAt` is at or before `now`, earliest first, skipping rows other
   * transactions hold (FOR UPDATE SKIP LOCKED), so that several processes share the job and none makes a move
   * twice. Only inside a transaction.
   */
  readonly claimDue: (now: number, limit: number) => Op<ReadonlyArray<Subscription>>
  /**
   * Subscriptions counted and their prices (`amount`) summed per status, currency and billing period and
   * interval: what the analytics overview's figures are computed from (the domain's `Billing.monthlyRecurring`).
   */
  readonly totals: Op<ReadonlyArray<SubscriptionTotal>>
  readonly insertRenewal: (subscriptionId: number, draft: RenewalDraft) => Op<RenewalRecord>
  /** A subscription's renewal records, oldest first. */
  readonly listRenewals: (subscriptionId: number, page: PageRequest) => Op<Page<RenewalRecord>>
}>()("@lm/domain/SubscriptionRepository") {}

/** One group of {@link SubscriptionRepository.totals}. */
export interface SubscriptionTotal {
  readonly status: SubscriptionStatus
  readonly currency: string
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly count: number
  /** The sum of the group's prices, in minor units (a bigint: a sum may pass 2^53). */
  readonly amount: bigint
}

/** A payment for a subscription: reported by the caller (with the provider's transaction id) or to be charged. */
export interface PaymentRequest {
  readonly subscriptionId: number
  readonly amount: number
  readonly currency: string
  readonly transactionId: string | null
}

/** What became of a payment. */
export interface PaymentOutcome {
  readonly status: RenewalStatus
  readonly transactionId: string | null
}

/**
 * Where subscription payments go (CONTRACT §10). The bundled default charges nothing itself: it records the
 * payments reported to it (`renew`, with an optional `transaction_id`) as paid. An embedder plugs in a payment
 * provider by providing another one.
 */
export const PaymentGateway = Context.Reference<{
  readonly collect: (request: PaymentRequest) => Effect.Effect<PaymentOutcome>
}>("@lm/domain/PaymentGateway", {
  defaultValue: () => ({ collect: (request) => Effect.succeed({ status: "paid", transactionId: request.transactionId }) })
})
