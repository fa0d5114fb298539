/**
 * The subscriptions feature's records (CONTRACT §10): subscriptions, their items and renewal records, plans and
 * proration, the literal lists of their statuses and moves, and the names of their events.
 */
import { Schema } from "effect"
import { Id, Millis } from "../shared/model.js"

/** Names of the subscription events of CONTRACT §11 (CONTRACT §10's moves). */
export const subscriptionEventTypes = [
  "subscription.created",
  "subscription.updated",
  "subscription.paused",
  "subscription.resumed",
  "subscription.cancelled",
  "subscription.switched",
  "subscription.renewed",
  "subscription.payment_failed",
  "subscription.expired"
] as const
export type SubscriptionEventType = (typeof subscriptionEventTypes)[number]

/** A subscription's status. `cancelled` and `expired` are final. */
export const subscriptionStatuses = ["pending", "trial", "active", "on-hold", "pending-cancel", "cancelled", "expired"] as const
export const SubscriptionStatus = Schema.Literals(subscriptionStatuses)
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/** The billing providers whose webhook events can drive a subscription (CONTRACT §20). */
export const billingProviders = ["stripe", "paddle", "lemonsqueezy"] as const
export const BillingProvider = Schema.Literals(billingProviders)
export type BillingProvider = typeof BillingProvider.Type

/** The unit of a billing period; a period is `billing_interval` of them. */
export const billingPeriods = ["day", "week", "month", "year"] as const
export const BillingPeriod = Schema.Literals(billingPeriods)
export type BillingPeriod = typeof BillingPeriod.Type

/**
 * What moves a subscription: the administrator's actions (pause, resume, cancel now or at the period end, renew
 * early or record a payment, switch plan) and the clock's (payment failed after the grace days, trial end,
 * period end, end date).
 */
export const subscriptionActions = [
  "pause",
  "resume",
  "cancel",
  "cancel_at_period_end",
  "renew",
  "switch",
  "update",
  "payment_failed",
  "trial_end",
  "period_end",
  "end_date"
] as const
export const SubscriptionAction = Schema.Literals(subscriptionActions)
export type SubscriptionAction = typeof SubscriptionAction.Type

/** The kind of a renewal record. */
export const renewalTypes = ["signup", "renewal", "early_renewal", "switch"] as const
export const RenewalType = Schema.Literals(renewalTypes)
export type RenewalType = typeof RenewalType.Type

/** Whether a renewal record's payment went through. */
export const renewalStatuses = ["paid", "failed", "pending"] as const
export const RenewalStatus = Schema.Literals(renewalStatuses)
export type RenewalStatus = typeof RenewalStatus.Type

/** A line of a subscription; `amount` in the currency's minor units. */
export const SubscriptionItem = Schema.Struct({
  id: Id,
  productId: Schema.NullOr(Id),
  quantity: Schema.Int,
  amount: Schema.Int
})
export type SubscriptionItem = typeof SubscriptionItem.Type

/**
 * A subscription as the store keeps it. Times are epoch milliseconds; `amount` is in the currency's minor units
 * (cents for USD, yen for JPY). `billingAnchor` is the moment the billing calendar counts from: its day of the
 * month is kept by month arithmetic (Jan 31 → Feb 28 → Mar 31).
 */
export const Subscription = Schema.Struct({
  id: Id,
  status: SubscriptionStatus,
  userId: Id,
  productId: Schema.NullOr(Id),
  licenseId: Id,
  billingPeriod: BillingPeriod,
  billingInterval: Schema.Int,
  amount: Schema.Int,
  currency: Schema.String,
  paymentMethod: Schema.NullOr(Schema.String),
  trialEnd: Schema.NullOr(Millis),
  billingAnchor: Millis,
  currentPeriodStart: Millis,
  currentPeriodEnd: Millis,
  nextPaymentAt: Schema.NullOr(Millis),
  lastPaymentAt: Schema.NullOr(Millis),
  endDate: Schema.NullOr(Millis),
  cancelAtPeriodEnd: Schema.Boolean,
  pausedAt: Schema.NullOr(Millis),
  cancelledAt: Schema.NullOr(Millis),
  items: Schema.Array(SubscriptionItem),
  /** The billing provider that drives it (null: none; CONTRACT §20). */
  billingProvider: Schema.NullOr(BillingProvider),
  /** Its subscription's id at that provider: unique per provider. */
  externalId: Schema.NullOr(Schema.String),
  createdAt: Millis,
  updatedAt: Millis,
  revision: Schema.Int
})
export type Subscription = typeof Subscription.Type
/** A new subscription as the store inserts it (revision 1). */
export type SubscriptionDraft = Omit<Subscription, "id" | "revision">

/** The plan a switch moves between, as a renewal record's `from` and `to` show it. */
export const Plan = Schema.Struct({
  amount: Schema.Int,
  billingPeriod: BillingPeriod,
  billingInterval: Schema.Int,
  productId: Schema.NullOr(Id)
})
export type Plan = typeof Plan.Type

/** Proration of a switch, in minor units: `net = charge − credit` exactly; a negative net is a credit. */
export const Proration = Schema.Struct({ credit: Schema.Int, charge: Schema.Int, net: Schema.Int })
export type Proration = typeof Proration.Type

/** One signup, renewal, early renewal or switch of a subscription (GET /subscriptions/{id}/renewals). */
export const RenewalRecord = Schema.Struct({
  id: Id,
  subscriptionId: Id,
  type: RenewalType,
  amount: Schema.Int,
  currency: Schema.String,
  status: RenewalStatus,
  periodStart: Millis,
  periodEnd: Millis,
  proration: Schema.NullOr(Proration),
  from: Schema.NullOr(Plan),
  to: Schema.NullOr(Plan),
  transactionId: Schema.NullOr(Schema.String),
  createdAt: Millis
})
export type RenewalRecord = typeof RenewalRecord.Type
export type RenewalDraft = Omit<RenewalRecord, "id" | "subscriptionId">
