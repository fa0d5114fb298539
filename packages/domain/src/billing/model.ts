/**
 * The billing feature's records (CONTRACT §20): a billing provider's webhook event as the domain sees it (already
 * verified and normalised by the adapter that received it), the subscription move it asks for, and the record
 * of what became of it (`GET /billing/events`).
 */
import { Schema } from "effect"
import { Id, Millis } from "../shared/model.js"
import { type BillingPeriod, BillingProvider } from "../subscriptions/model.js"

/** What became of a provider event. */
export const billingEventOutcomes = ["applied", "duplicate", "stale", "unmatched", "ignored"] as const
export const BillingEventOutcome = Schema.Literals(billingEventOutcomes)
export type BillingEventOutcome = typeof BillingEventOutcome.Type

/**
 * The subscription move a provider event asks for, whatever the provider calls it: a period paid (its bounds and
 * the amount collected, in minor units), a payment failed, paused, resumed, cancel at the period end, cancelled or
 * ended, a plan or price change (the provider's amount, and its period when it says; the same plan as now undoes a
 * pending cancel, which is how providers report a cancel withdrawn), or only the link of a new provider
 * subscription to its subscription here.
 */
export type BillingMove =
  | {
    readonly _tag: "Paid"
    readonly periodStart: number
    /** Null when the provider does not say (Lemon Squeezy): one period of the subscription's calendar. */
    readonly periodEnd: number | null
    readonly amount: number | null
    readonly currency: string | null
    readonly transactionId: string | null
  }
  | { readonly _tag: "PaymentFailed"; readonly transactionId: string | null }
  | { readonly _tag: "Pause" }
  | { readonly _tag: "Resume" }
  | { readonly _tag: "CancelAtPeriodEnd" }
  | { readonly _tag: "Cancelled" }
  | {
    readonly _tag: "Switch"
    /** The new price per period in minor units; null when the provider does not say (the amount stays). */
    readonly amount: number | null
    readonly currency: string | null
    readonly billingPeriod?: BillingPeriod | undefined
    readonly billingInterval?: number | undefined
  }
  | { readonly _tag: "Link" }

/** A provider's webhook event, verified and normalised by the adapter that received it. */
export interface ProviderEvent {
  readonly provider: BillingProvider
  /** The provider's event id (Lemon Squeezy sends none: the SHA-256 of the raw body stands in). */
  readonly eventId: string
  /** The provider's own event type, e.g. `invoice.paid`, `transaction.completed`, `subscription_payment_success`. */
  readonly type: string
  /** The provider's timestamp of the event (epoch ms): what orders a subscription's events. */
  readonly occurredAt: number
  /** The provider's subscription id. */
  readonly externalId: string | null
  /** `lm_subscription_id` from the provider object's metadata / custom data. */
  readonly lmSubscriptionId: number | null
  /** The move it asks for; null for an event type that moves nothing (recorded as `ignored`). */
  readonly move: BillingMove | null
}

/**
 * A received provider event and its outcome, as `GET /billing/events` lists it. `eventId` is the provider's id
 * (the wire's `id`); `id` is the store's own.
 */
export const BillingEvent = Schema.Struct({
  id: Id,
  eventId: Schema.String,
  provider: BillingProvider,
  type: Schema.String,
  externalId: Schema.NullOr(Schema.String),
  subscriptionId: Schema.NullOr(Id),
  outcome: BillingEventOutcome,
  occurredAt: Millis,
  receivedAt: Millis
})
export type BillingEvent = typeof BillingEvent.Type
export type BillingEventDraft = Omit<BillingEvent, "id">
