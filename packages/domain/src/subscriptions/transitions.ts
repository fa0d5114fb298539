/**
 * The subscription state table of CONTRACT §10 (which action is allowed from which status) and the change a move
 * makes: the new subscription, the renewal record it writes and its events. The moves themselves are in
 * `actions.ts`, `provider.ts` and `clock.ts`; `subscription.ts` is their entry.
 */
import { Result } from "effect"
import { invalidTransition, type InvalidTransition } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { addPeriods, anchorDayOf } from "./billing.js"
import type {
  Plan,
  RenewalDraft,
  Subscription,
  SubscriptionAction,
  SubscriptionEventType,
  SubscriptionStatus
} from "./model.js"

export const DAY_MS = 86_400_000

/**
 * Where each action may go from each status; a status absent from an action's row is a forbidden move
 * (409 `invalid_transition`). `cancelled` and `expired` are final: no row names them.
 */
export const transitions: Record<SubscriptionAction, Partial<Record<SubscriptionStatus, SubscriptionStatus>>> = {
  pause: { active: "on-hold", trial: "on-hold" },
  resume: { "on-hold": "active", "pending-cancel": "active" },
  cancel: { pending: "cancelled", trial: "cancelled", active: "cancelled", "on-hold": "cancelled", "pending-cancel": "cancelled" },
  cancel_at_period_end: { trial: "pending-cancel", active: "pending-cancel" },
  renew: { pending: "active", trial: "active", active: "active", "on-hold": "active" },
  switch: { trial: "trial", active: "active" },
  update: { pending: "pending", trial: "trial", active: "active", "on-hold": "on-hold", "pending-cancel": "pending-cancel" },
  payment_failed: { active: "on-hold" },
  trial_end: { trial: "active" },
  period_end: { "pending-cancel": "cancelled" },
  end_date: { pending: "expired", trial: "expired", active: "expired", "on-hold": "expired", "pending-cancel": "expired" }
}

/** The status `action` leads to from `status`, or `invalid_transition` naming both. */
export const nextStatus = (status: SubscriptionStatus, action: SubscriptionAction): Result.Result<SubscriptionStatus, InvalidTransition> => {
  const to = transitions[action][status]
  return to === undefined ? Result.fail(invalidTransition(status, action, "subscription")) : Result.succeed(to)
}

/** Whether a status is final. */
export const isFinal = (status: SubscriptionStatus): boolean => status === "cancelled" || status === "expired"

/** The outcome of a subscription change: the subscription now, the renewal record it writes (if any), its events. */
export interface SubscriptionChange {
  readonly subscription: Subscription
  readonly renewal: RenewalDraft | null
  readonly events: ReadonlyArray<DomainEvent>
}

export const event = (type: SubscriptionEventType, subscription: Subscription, now: number, data: Record<string, unknown> = {}): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: subscription.licenseId,
  machineId: null,
  data: { subscription_id: subscription.id, status: subscription.status, ...data }
})

export const touched = (subscription: Subscription, now: number, patch: Partial<Subscription>): Subscription => ({
  ...subscription,
  ...patch,
  updatedAt: now,
  revision: subscription.revision + 1
})

/** One period after `from` on the subscription's calendar (its anchor day kept). */
export const periodAfter = (subscription: Pick<Subscription, "billingPeriod" | "billingInterval" | "billingAnchor">, from: number): number =>
  addPeriods(from, subscription.billingPeriod, subscription.billingInterval, 1, anchorDayOf(subscription.billingAnchor))

/** The plan of a subscription, as a switch's renewal record shows it. */
export const planOf = (subscription: Pick<Subscription, "amount" | "billingPeriod" | "billingInterval" | "productId">): Plan => ({
  amount: subscription.amount,
  billingPeriod: subscription.billingPeriod,
  billingInterval: subscription.billingInterval,
  productId: subscription.productId
})

export type Change = Result.Result<SubscriptionChange, InvalidTransition>

export const move = (
  subscription: Subscription,
  action: SubscriptionAction,
  now: number,
  build: (status: SubscriptionStatus) => { patch: Partial<Subscription>; type: SubscriptionEventType; data?: Record<string, unknown>; renewal?: RenewalDraft }
): Change => {
  const to = nextStatus(subscription.status, action)
  if (Result.isFailure(to)) return Result.fail(to.failure)
  const { patch, type, data, renewal } = build(to.success)
  const next = touched(subscription, now, { ...patch, status: to.success })
  return Result.succeed({
    subscription: next,
    renewal: renewal ?? null,
    events: [event(type, next, now, { from: subscription.status, action, ...data })]
  })
}

/** The record of a payment that failed for the period after the current one (no proration, plan unchanged). */
export const failedRenewal = (subscription: Subscription, type: "renewal" | "early_renewal", now: number, transactionId: string | null): RenewalDraft => {
  const from = subscription.currentPeriodEnd
  return {
    type,
    amount: subscription.amount,
    currency: subscription.currency,
    status: "failed",
    periodStart: from,
    periodEnd: periodAfter(subscription, from),
    proration: null,
    from: null,
    to: planOf(subscription),
    transactionId,
    createdAt: now
  }
}
