/** The wire shapes of subscriptions (CONTRACT §10), their renewal records and billing provider events (§20). */
import { Schema } from "effect"
import { Model, Money } from "@lm/domain/core"
import { Time } from "./Record.js"
import { iso, isoOrNull } from "./Scalars.js"

// ---- subscriptions (CONTRACT §10) ----------------------------------------------------------------------------

/** A subscription's item on the wire. */
export const ItemWire = Schema.Struct({ id: Schema.Int, product_id: Schema.NullOr(Schema.Int), quantity: Schema.Int, amount: Schema.String })

/** A subscription on the wire; money as decimal strings in its currency. */
export const SubscriptionWire = Schema.Struct({
  id: Schema.Int,
  status: Model.SubscriptionStatus,
  user_id: Schema.Int,
  product_id: Schema.NullOr(Schema.Int),
  license_id: Schema.Int,
  billing_period: Model.BillingPeriod,
  billing_interval: Schema.Int,
  amount: Schema.String,
  currency: Schema.String,
  payment_method: Schema.NullOr(Schema.String),
  trial_end: Schema.NullOr(Time),
  current_period_start: Time,
  current_period_end: Time,
  next_payment_at: Schema.NullOr(Time),
  last_payment_at: Schema.NullOr(Time),
  end_date: Schema.NullOr(Time),
  cancel_at_period_end: Schema.Boolean,
  paused_at: Schema.NullOr(Time),
  cancelled_at: Schema.NullOr(Time),
  items: Schema.Array(ItemWire),
  billing_provider: Schema.NullOr(Model.BillingProvider),
  external_id: Schema.NullOr(Schema.String),
  created_at: Time,
  updated_at: Time
})
export type SubscriptionWire = typeof SubscriptionWire.Type

export const subscriptionToWire = (s: Model.Subscription): SubscriptionWire => ({
  id: s.id,
  status: s.status,
  user_id: s.userId,
  product_id: s.productId,
  license_id: s.licenseId,
  billing_period: s.billingPeriod,
  billing_interval: s.billingInterval,
  amount: Money.formatAmount(s.amount, s.currency),
  currency: s.currency,
  payment_method: s.paymentMethod,
  trial_end: isoOrNull(s.trialEnd),
  current_period_start: iso(s.currentPeriodStart),
  current_period_end: iso(s.currentPeriodEnd),
  next_payment_at: isoOrNull(s.nextPaymentAt),
  last_payment_at: isoOrNull(s.lastPaymentAt),
  end_date: isoOrNull(s.endDate),
  cancel_at_period_end: s.cancelAtPeriodEnd,
  paused_at: isoOrNull(s.pausedAt),
  cancelled_at: isoOrNull(s.cancelledAt),
  items: s.items.map((item) => ({ id: item.id, product_id: item.productId, quantity: item.quantity, amount: Money.formatAmount(item.amount, s.currency) })),
  billing_provider: s.billingProvider,
  external_id: s.externalId,
  created_at: iso(s.createdAt),
  updated_at: iso(s.updatedAt)
})

/** A received billing provider event on the wire (CONTRACT §20). */
export const BillingEventWire = Schema.Struct({
  id: Schema.String.annotate({ description: "The provider's event id (Lemon Squeezy: the SHA-256 of the body)." }),
  provider: Model.BillingProvider,
  type: Schema.String,
  external_id: Schema.NullOr(Schema.String),
  subscription_id: Schema.NullOr(Schema.Int),
  outcome: Model.BillingEventOutcome,
  received_at: Time
})
export type BillingEventWire = typeof BillingEventWire.Type

export const billingEventToWire = (e: Model.BillingEvent): BillingEventWire => ({
  id: e.eventId,
  provider: e.provider,
  type: e.type,
  external_id: e.externalId,
  subscription_id: e.subscriptionId,
  outcome: e.outcome,
  received_at: iso(e.receivedAt)
})

const PlanWire = Schema.Struct({ amount: Schema.String, billing_period: Model.BillingPeriod, billing_interval: Schema.Int, product_id: Schema.NullOr(Schema.Int) })

/** A renewal record on the wire. */
export const RenewalWire = Schema.Struct({
  id: Schema.Int,
  type: Model.RenewalType,
  amount: Schema.String,
  currency: Schema.String,
  status: Model.RenewalStatus,
  period_start: Time,
  period_end: Time,
  proration: Schema.NullOr(Schema.Struct({ credit: Schema.String, charge: Schema.String, net: Schema.String })),
  from: Schema.NullOr(PlanWire),
  to: Schema.NullOr(PlanWire),
  transaction_id: Schema.NullOr(Schema.String),
  created_at: Time
})
export type RenewalWire = typeof RenewalWire.Type

export const renewalToWire = (r: Model.RenewalRecord): RenewalWire => {
  const money = (minor: number) => Money.formatAmount(minor, r.currency)
  const plan = (p: Model.Plan | null) =>
    p === null ? null : { amount: money(p.amount), billing_period: p.billingPeriod, billing_interval: p.billingInterval, product_id: p.productId }
  return {
    id: r.id,
    type: r.type,
    amount: money(r.amount),
    currency: r.currency,
    status: r.status,
    period_start: iso(r.periodStart),
    period_end: iso(r.periodEnd),
    proration: r.proration === null ? null : { credit: money(r.proration.credit), charge: money(r.proration.charge), net: money(r.proration.net) },
    from: plan(r.from),
    to: plan(r.to),
    transaction_id: r.transactionId,
    created_at: iso(r.createdAt)
  }
}
