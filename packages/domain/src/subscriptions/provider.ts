/**
 * The subscription moves a billing provider's events make (CONTRACT §20): a period it was paid for and a plan
 * change it made. Its declines, pauses and cancels are the administrator's moves (`actions.ts`).
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam, type InvalidTransition } from "../shared/errors.js"
import type { PlanSwitch } from "./actions.js"
import { checkAmount, checkInterval } from "./checks.js"
import type { Subscription } from "./model.js"
import { move, periodAfter, planOf, type SubscriptionChange } from "./transitions.js"

/** A period a billing provider was paid for (CONTRACT §20): its bounds, and what it collected. */
export interface PaidPeriod {
  readonly periodStart: number
  /** Null: one period of the subscription's calendar from the start. */
  readonly periodEnd: number | null
  /** In the subscription's currency's minor units; the subscription's amount when the provider does not say. */
  readonly amount: number | null
  readonly transactionId: string | null
}

/**
 * A payment a billing provider collected for a period: a paid `renewal` whose period is the provider's (the
 * license then expires at its end); from trial or on-hold it also makes the subscription active (the `renew`
 * move). A period that ends before the current one adds nothing the subscription has not got.
 */
export const paidPeriod = (subscription: Subscription, paid: PaidPeriod, now: number): Result.Result<SubscriptionChange, InvalidTransition | InvalidParam> => {
  const periodEnd = paid.periodEnd ?? periodAfter(subscription, paid.periodStart)
  if (!(periodEnd > paid.periodStart)) return Result.fail(invalidParam("period", "must end after it starts"))
  if (paid.amount !== null) {
    const amount = checkAmount("amount", paid.amount)
    if (Result.isFailure(amount)) return Result.fail(amount.failure)
  }
  return move(subscription, "renew", now, () => ({
    patch: {
      currentPeriodStart: paid.periodStart,
      currentPeriodEnd: periodEnd,
      nextPaymentAt: periodEnd,
      lastPaymentAt: now,
      pausedAt: null
    },
    type: "subscription.renewed",
    data: { renewal_type: "renewal", period_end: periodEnd },
    renewal: {
      type: "renewal",
      amount: paid.amount ?? subscription.amount,
      currency: subscription.currency,
      status: "paid",
      periodStart: paid.periodStart,
      periodEnd,
      proration: null,
      from: null,
      to: planOf(subscription),
      transactionId: paid.transactionId,
      createdAt: now
    }
  }))
}

/**
 * A plan or price change a billing provider made (CONTRACT §20): the `switch` move with the provider's amounts.
 * The provider prorated (or not) on its side, so nothing is prorated here: the record carries the plans `from`
 * and `to` with no proration, and the period stays as the provider's last paid one.
 */
export const providerSwitch = (subscription: Subscription, to: PlanSwitch, now: number): Result.Result<SubscriptionChange, InvalidTransition | InvalidParam> => {
  const amount = checkAmount("amount", to.amount)
  if (Result.isFailure(amount)) return Result.fail(amount.failure)
  if (to.billingInterval !== undefined) {
    const interval = checkInterval(to.billingInterval)
    if (Result.isFailure(interval)) return Result.fail(interval.failure)
  }
  return move(subscription, "switch", now, () => {
    const patch: Partial<Subscription> = {
      amount: to.amount,
      ...(to.billingPeriod !== undefined ? { billingPeriod: to.billingPeriod } : {}),
      ...(to.billingInterval !== undefined ? { billingInterval: to.billingInterval } : {}),
      ...(to.productId !== undefined ? { productId: to.productId } : {})
    }
    return {
      patch,
      type: "subscription.switched",
      data: { proration: null },
      renewal: {
        type: "switch",
        amount: 0,
        currency: subscription.currency,
        status: "paid",
        periodStart: subscription.currentPeriodStart,
        periodEnd: subscription.currentPeriodEnd,
        proration: null,
        from: planOf(subscription),
        to: planOf({ ...subscription, ...patch }),
        transactionId: null,
        createdAt: now
      }
    }
  })
}
