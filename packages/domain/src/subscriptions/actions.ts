/**
 * The subscription moves an administrator or the payment gateway makes (CONTRACT §10): signup, pause, resume,
 * cancel, renew, a declined payment, a plan switch and PUT. Pure functions of (subscription, command, now)
 * returning the change or the contract's error.
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam, invalidTransition, type InvalidTransition } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { checkCurrency } from "../shared/money.js"
import { addPeriods, anchorDayOf, prorate } from "./billing.js"
import { checkAmount, checkBillingLink, checkInterval, checkItems, intIn, maxTrialDays } from "./checks.js"
import type { BillingPeriod, BillingProvider, RenewalDraft, Subscription, SubscriptionDraft, SubscriptionItem } from "./model.js"
import { type Change, DAY_MS, event, failedRenewal, isFinal, move, periodAfter, planOf, type SubscriptionChange, touched } from "./transitions.js"

// ---- signup ----------------------------------------------------------------------------------------------

/** What a POST /subscriptions sets (money already parsed into minor units). */
export interface NewSubscription {
  readonly userId: number
  readonly productId: number | null
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly amount: number
  readonly currency: string
  readonly paymentMethod: string | null
  readonly trialDays: number
  readonly startDate: number | null
  readonly endDate: number | null
  readonly items: ReadonlyArray<SubscriptionItem>
  /** The billing provider that drives it and its id there (CONTRACT §20); default none. */
  readonly billingProvider?: BillingProvider | null | undefined
  readonly externalId?: string | null | undefined
}

/** A new subscription and its signup record. Its events are made once the store gave it an id ({@link created}). */
export interface Signup {
  readonly draft: Omit<SubscriptionDraft, "licenseId">
  readonly renewal: RenewalDraft
}

/**
 * A new subscription: `trial` for `trial_days` from the start (the trial is its first period and the first
 * payment is due at its end), else `active` with its first period paid at signup. The period starts at
 * `start_date` (default now, past or future) and the calendar is anchored at the first paid period's start.
 */
export const signup = (input: NewSubscription, now: number): Result.Result<Signup, InvalidParam> => {
  const checks: ReadonlyArray<Result.Result<unknown, InvalidParam>> = [
    checkInterval(input.billingInterval),
    checkAmount("amount", input.amount),
    checkCurrency("currency", input.currency),
    checkItems(input.items),
    checkBillingLink(input.billingProvider ?? null, input.externalId ?? null)
  ]
  for (const check of checks) if (Result.isFailure(check)) return Result.fail(check.failure)
  if (!intIn(input.trialDays, 0, maxTrialDays)) return Result.fail(invalidParam("trial_days", `must be an integer from 0 to ${maxTrialDays}`))
  const start = input.startDate ?? now
  const trial = input.trialDays > 0
  const trialEnd = trial ? start + input.trialDays * DAY_MS : null
  const anchor = trialEnd ?? start
  const periodEnd = trialEnd ?? addPeriods(start, input.billingPeriod, input.billingInterval, 1, anchorDayOf(anchor))
  if (input.endDate !== null && input.endDate <= start) return Result.fail(invalidParam("end_date", "must be after the start"))
  const draft: Omit<SubscriptionDraft, "licenseId"> = {
    status: trial ? "trial" : "active",
    userId: input.userId,
    productId: input.productId,
    billingPeriod: input.billingPeriod,
    billingInterval: input.billingInterval,
    amount: input.amount,
    currency: input.currency,
    paymentMethod: input.paymentMethod,
    trialEnd,
    billingAnchor: anchor,
    currentPeriodStart: start,
    currentPeriodEnd: periodEnd,
    nextPaymentAt: periodEnd,
    lastPaymentAt: trial ? null : now,
    endDate: input.endDate,
    cancelAtPeriodEnd: false,
    pausedAt: null,
    cancelledAt: null,
    items: input.items,
    billingProvider: input.billingProvider ?? null,
    externalId: input.externalId ?? null,
    createdAt: now,
    updatedAt: now
  }
  const renewal: RenewalDraft = {
    type: "signup",
    amount: trial ? 0 : input.amount,
    currency: input.currency,
    status: "paid",
    periodStart: start,
    periodEnd,
    proration: null,
    from: null,
    to: planOf(draft),
    transactionId: null,
    createdAt: now
  }
  return Result.succeed({ draft, renewal })
}

/** The event for a new subscription. */
export const created = (subscription: Subscription, now: number): DomainEvent =>
  event("subscription.created", subscription, now, { license_id: subscription.licenseId })

// ---- the administrator's actions --------------------------------------------------------------------------

/** Pause: active or trial → on-hold (the bound license is suspended). */
export const pause = (subscription: Subscription, now: number): Change =>
  move(subscription, "pause", now, () => ({ patch: { pausedAt: now }, type: "subscription.paused" }))

/** Resume: on-hold → active; pending-cancel → active, undoing the cancel. */
export const resume = (subscription: Subscription, now: number): Change =>
  move(subscription, "resume", now, () => ({
    patch: { pausedAt: null, cancelAtPeriodEnd: false, nextPaymentAt: subscription.nextPaymentAt ?? subscription.currentPeriodEnd },
    type: "subscription.resumed"
  }))

/** Cancel now (→ cancelled) or at the period end (→ pending-cancel, cancelled by the clock at the period end). */
export const cancel = (subscription: Subscription, atPeriodEnd: boolean, now: number): Change =>
  atPeriodEnd
    ? move(subscription, "cancel_at_period_end", now, () => ({
      patch: { cancelAtPeriodEnd: true, nextPaymentAt: null },
      type: "subscription.cancelled",
      data: { at_period_end: true }
    }))
    : move(subscription, "cancel", now, () => ({
      patch: { cancelledAt: now, nextPaymentAt: null },
      type: "subscription.cancelled",
      data: { at_period_end: false }
    }))

/**
 * Renew: records a paid renewal now and extends the current period end by one period from its end (not from
 * now). It is an `early_renewal` before the payment is due and a `renewal` after; from on-hold or trial it also
 * makes the subscription active.
 */
export const renew = (subscription: Subscription, now: number, transactionId: string | null): Change =>
  move(subscription, "renew", now, () => {
    const from = subscription.currentPeriodEnd
    const until = periodAfter(subscription, from)
    const due = subscription.nextPaymentAt ?? from
    const type = now < due ? "early_renewal" : "renewal"
    return {
      patch: {
        // a renewal paid after the period ended starts the next period; an early one extends the current one
        currentPeriodStart: now >= from ? from : subscription.currentPeriodStart,
        currentPeriodEnd: until,
        nextPaymentAt: until,
        lastPaymentAt: now,
        pausedAt: null
      },
      type: "subscription.renewed",
      data: { renewal_type: type, period_end: until },
      renewal: {
        type,
        amount: subscription.amount,
        currency: subscription.currency,
        status: "paid",
        periodStart: from,
        periodEnd: until,
        proration: null,
        from: null,
        to: planOf(subscription),
        transactionId,
        createdAt: now
      }
    }
  })

/**
 * A payment the gateway declined: the subscription stays as it is (the clock puts it on hold once the grace
 * days are over); a failed renewal record and `subscription.payment_failed` say so.
 */
export const paymentDeclined = (subscription: Subscription, now: number, transactionId: string | null): Change => {
  if (isFinal(subscription.status)) return Result.fail(invalidTransition(subscription.status, "renew", "subscription"))
  const from = subscription.currentPeriodEnd
  const next = touched(subscription, now, {})
  return Result.succeed({
    subscription: next,
    renewal: failedRenewal(subscription, now < (subscription.nextPaymentAt ?? from) ? "early_renewal" : "renewal", now, transactionId),
    events: [event("subscription.payment_failed", next, now, { transaction_id: transactionId })]
  })
}

/** A switch of plan: a new amount, and optionally a new period length or product. */
export interface PlanSwitch {
  readonly amount: number
  readonly billingPeriod?: BillingPeriod | undefined
  readonly billingInterval?: number | undefined
  readonly productId?: number | null | undefined
}

/**
 * Switch plan, prorated on seconds (CONTRACT §10): with the same period length the period stays and
 * `net = charge − credit` over its unused part; a new length starts a new period now (anchored now) and
 * `net = new amount − credit`. During a trial nothing was paid, so nothing is prorated. The renewal record
 * carries the proration and the plans `from` and `to`.
 */
export const switchPlan = (subscription: Subscription, to: PlanSwitch, now: number): Result.Result<SubscriptionChange, InvalidTransition | InvalidParam> => {
  const amount = checkAmount("amount", to.amount)
  if (Result.isFailure(amount)) return Result.fail(amount.failure)
  if (to.billingInterval !== undefined) {
    const interval = checkInterval(to.billingInterval)
    if (Result.isFailure(interval)) return Result.fail(interval.failure)
  }
  const period = to.billingPeriod ?? subscription.billingPeriod
  const interval = to.billingInterval ?? subscription.billingInterval
  const newLength = period !== subscription.billingPeriod || interval !== subscription.billingInterval
  const trial = subscription.status === "trial"
  return move(subscription, "switch", now, () => {
    const proration = trial
      ? { credit: 0, charge: 0, net: 0 }
      : prorate(subscription.amount, to.amount, subscription.currentPeriodStart, subscription.currentPeriodEnd, now, newLength)
    const restart = newLength && !trial
    const periodStart = restart ? now : subscription.currentPeriodStart
    const periodEnd = restart ? addPeriods(now, period, interval, 1, anchorDayOf(now)) : subscription.currentPeriodEnd
    const patch: Partial<Subscription> = {
      amount: to.amount,
      billingPeriod: period,
      billingInterval: interval,
      ...(to.productId !== undefined ? { productId: to.productId } : {}),
      ...(restart ? { billingAnchor: now, currentPeriodStart: now, currentPeriodEnd: periodEnd, nextPaymentAt: periodEnd } : {})
    }
    const after = { ...subscription, ...patch }
    return {
      patch,
      type: "subscription.switched",
      data: { proration },
      renewal: {
        type: "switch",
        amount: proration.net,
        currency: subscription.currency,
        status: "paid",
        periodStart,
        periodEnd,
        proration,
        from: planOf(subscription),
        to: planOf(after),
        transactionId: null,
        createdAt: now
      }
    }
  })
}

/** The fields PUT may change (money already in minor units). A new period length applies from the next period. */
export interface SubscriptionUpdate {
  readonly billingPeriod?: BillingPeriod | undefined
  readonly billingInterval?: number | undefined
  readonly amount?: number | undefined
  readonly paymentMethod?: string | null | undefined
  readonly nextPaymentAt?: number | null | undefined
  readonly endDate?: number | null | undefined
  readonly items?: ReadonlyArray<SubscriptionItem> | undefined
  readonly billingProvider?: BillingProvider | null | undefined
  readonly externalId?: string | null | undefined
}

/** PUT: changes the writable fields of a subscription that is not final. */
export const update = (subscription: Subscription, patch: SubscriptionUpdate, now: number): Result.Result<SubscriptionChange, InvalidTransition | InvalidParam> => {
  if (patch.billingInterval !== undefined) {
    const interval = checkInterval(patch.billingInterval)
    if (Result.isFailure(interval)) return Result.fail(interval.failure)
  }
  if (patch.amount !== undefined) {
    const amount = checkAmount("amount", patch.amount)
    if (Result.isFailure(amount)) return Result.fail(amount.failure)
  }
  if (patch.items !== undefined) {
    const items = checkItems(patch.items)
    if (Result.isFailure(items)) return Result.fail(items.failure)
  }
  if (patch.billingProvider !== undefined || patch.externalId !== undefined) {
    const link = checkBillingLink(
      patch.billingProvider === undefined ? subscription.billingProvider : patch.billingProvider,
      patch.externalId === undefined ? subscription.externalId : patch.externalId
    )
    if (Result.isFailure(link)) return Result.fail(link.failure)
  }
  if (patch.endDate != null && patch.endDate <= subscription.currentPeriodStart) {
    return Result.fail(invalidParam("end_date", "must be after the current period's start"))
  }
  const defined = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)) as Partial<Subscription>
  return move(subscription, "update", now, () => ({
    patch: defined,
    type: "subscription.updated",
    data: { fields: Object.keys(defined) }
  }))
}
