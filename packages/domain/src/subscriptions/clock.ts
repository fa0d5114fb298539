/** The subscription moves the clock makes (CONTRACT §10): what is due, when, and applying it. */
import type { Subscription, SubscriptionAction } from "./model.js"
import { type Change, DAY_MS, failedRenewal, isFinal, move } from "./transitions.js"

/** A move the clock makes: which action, and the moment it became due (which a late job records, not its now). */
export interface DueMove {
  readonly action: Extract<SubscriptionAction, "end_date" | "trial_end" | "period_end" | "payment_failed">
  readonly dueAt: number
}

/**
 * The move the clock makes on a subscription at `now`, if any, in order: the end date expires it; a trial
 * ends; a pending cancel becomes final at the period end; an unpaid payment puts it on hold `graceDays` after
 * it was due. A subscription its billing provider drives is moved by the provider's events, so the clock only
 * applies the grace rule to it (CONTRACT §20).
 */
export const dueMove = (subscription: Subscription, now: number, graceDays: number): DueMove | null => {
  const { status } = subscription
  if (isFinal(status)) return null
  if (subscription.billingProvider !== null) {
    if (status !== "active" || subscription.nextPaymentAt === null) return null
    const dueAt = subscription.nextPaymentAt + graceDays * DAY_MS
    return dueAt <= now ? { action: "payment_failed", dueAt } : null
  }
  if (subscription.endDate !== null && subscription.endDate <= now) return { action: "end_date", dueAt: subscription.endDate }
  if (status === "trial" && subscription.trialEnd !== null && subscription.trialEnd <= now) return { action: "trial_end", dueAt: subscription.trialEnd }
  if (status === "pending-cancel" && subscription.currentPeriodEnd <= now) return { action: "period_end", dueAt: subscription.currentPeriodEnd }
  if (status === "active" && subscription.nextPaymentAt !== null) {
    const dueAt = subscription.nextPaymentAt + graceDays * DAY_MS
    if (dueAt <= now) return { action: "payment_failed", dueAt }
  }
  return null
}

/**
 * The earliest moment the clock has a move for the subscription (null for none): what a store indexes so the
 * job finds due work without scanning, and a job that was down catches up on.
 */
export const nextDueAt = (subscription: Subscription, graceDays: number): number | null => {
  if (isFinal(subscription.status)) return null
  if (subscription.billingProvider !== null) {
    return subscription.status === "active" && subscription.nextPaymentAt !== null ? subscription.nextPaymentAt + graceDays * DAY_MS : null
  }
  const candidates = [
    subscription.endDate,
    subscription.status === "trial" ? subscription.trialEnd : null,
    subscription.status === "pending-cancel" ? subscription.currentPeriodEnd : null,
    subscription.status === "active" && subscription.nextPaymentAt !== null ? subscription.nextPaymentAt + graceDays * DAY_MS : null
  ].filter((at): at is number => at !== null)
  return candidates.length === 0 ? null : Math.min(...candidates)
}

/** Applies the clock's move (from {@link dueMove}) at `now`; final times are the moment it was due. */
export const applyDue = (subscription: Subscription, due: DueMove, now: number): Change => {
  switch (due.action) {
    case "end_date":
      return move(subscription, "end_date", now, () => ({ patch: { nextPaymentAt: null, cancelAtPeriodEnd: false }, type: "subscription.expired" }))
    case "trial_end":
      return move(subscription, "trial_end", now, () => ({ patch: {}, type: "subscription.updated", data: { fields: ["status"] } }))
    case "period_end":
      return move(subscription, "period_end", now, () => ({
        patch: { cancelledAt: due.dueAt, nextPaymentAt: null },
        type: "subscription.cancelled",
        data: { at_period_end: true }
      }))
    case "payment_failed": {
      return move(subscription, "payment_failed", now, () => ({
        patch: {},
        type: "subscription.payment_failed",
        renewal: failedRenewal(subscription, "renewal", now, null)
      }))
    }
  }
}
