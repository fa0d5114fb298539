/**
 * The subscriptions feature's records (CONTRACT §10): subscriptions, their items and renewal records, plans and
 * proration, the literal lists of their statuses and moves, and the names of their events.
 */
import { Schema } from "effect"

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
export interface SubscriptionItem {
  readonly id: number
  readonly productId: number | null
  readonly quantity: number
  readonly amount: number
}

/**
 * A subscription as the store keeps it. Times are epoch milliseconds; `amount` is in the currency's minor units
 * (cents for USD, yen for JPY). `billingAnchor` is the moment the billing calendar counts from: its day of the
 * month is kept by month arithmetic (Jan 31 → Feb 28 → Mar 31).
 */
export interface Subscription {
  readonly id: number
  readonly status: SubscriptionStatus
  readonly userId: number
  readonly productId: number | null
  readonly licenseId: number
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly amount: number
  readonly currency: string
  readonly paymentMethod: string | null
  readonly trialEnd: number | null
  readonly billingAnchor: number
  readonly currentPeriodStart: number
  readonly currentPeriodEnd: number
  readonly nextPaymentAt: number | null
  readonly lastPaymentAt: number | null
  readonly endDate: number | null
  readonly cancelAtPeriodEnd: boolean
  readonly pausedAt: number | null
  readonly cancelledAt: number | null
  readonly items: ReadonlyArray<SubscriptionItem>
  /** The billing provider that drives it (null: none; CONTRACT §20). */
  readonly billingProvider: BillingProvider | null
  /** Its subscription's id at that provider: unique per provider. */
  readonly externalId: string | null
  readonly createdAt: number
  readonly updatedAt: number
  readonly revision: number
}
/** A new subscription as the store inserts it (revision 1). */
export type SubscriptionDraft = Omit<Subscription, "id" | "revision">

/** The plan a switch moves between, as a renewal record's `from` and `to` show it. */
export interface Plan {
  readonly amount: number
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly productId: number | null
}

/** Proration of a switch, in minor units: `net = charge − credit` exactly; a negative net is a credit. */
export interface Proration {
  readonly credit: number
  readonly charge: number
  readonly net: number
}

/** One signup, renewal, early renewal or switch of a subscription (GET /subscriptions/{id}/renewals). */
export interface RenewalRecord {
  readonly id: number
  readonly subscriptionId: number
  readonly type: RenewalType
  readonly amount: number
  readonly currency: string
  readonly status: RenewalStatus
  readonly periodStart: number
  readonly periodEnd: number
  readonly proration: Proration | null
  readonly from: Plan | null
  readonly to: Plan | null
  readonly transactionId: string | null
  readonly createdAt: number
}
export type RenewalDraft = Omit<RenewalRecord, "id" | "subscriptionId">
