/**
 * The subscription state machine of CONTRACT §10 and the rules derived from it: which action is allowed from
 * which status (one table), what each does to the billing period, the renewal record it writes and the events
 * it causes, what the clock makes due, and how the bound license follows. Pure functions of (subscription,
 * command, now) returning the new subscription or the contract's error, like licensing's `license.ts`.
 */
import { Result } from "effect"
import type { License } from "../licensing/model.js"
import { invalidParam, type InvalidParam, invalidTransition, type InvalidTransition } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { checkCurrency, maxMinorUnits } from "../shared/money.js"
import { addPeriods, anchorDayOf, maxBillingInterval, prorate } from "./billing.js"
import type {
  BillingPeriod,
  BillingProvider,
  Plan,
  RenewalDraft,
  Subscription,
  SubscriptionAction,
  SubscriptionDraft,
  SubscriptionEventType,
  SubscriptionItem,
  SubscriptionStatus
} from "./model.js"

const DAY_MS = 86_400_000

/** `trial_days`: 0 to 10 years. */
export const maxTrialDays = 3650

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

const event = (type: SubscriptionEventType, subscription: Subscription, now: number, data: Record<string, unknown> = {}): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: subscription.licenseId,
  machineId: null,
  data: { subscription_id: subscription.id, status: subscription.status, ...data }
})

const touched = (subscription: Subscription, now: number, patch: Partial<Subscription>): Subscription => ({
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

// ---- input checks ----------------------------------------------------------------------------------------

const intIn = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max

/** Checks `billing_interval` (1–365). */
export const checkInterval = (interval: number): Result.Result<number, InvalidParam> =>
  intIn(interval, 1, maxBillingInterval)
    ? Result.succeed(interval)
    : Result.fail(invalidParam("billing_interval", `must be an integer from 1 to ${maxBillingInterval}`))

/** Checks an amount in minor units (0 up to the largest exact JSON integer). */
export const checkAmount = (field: string, amount: number): Result.Result<number, InvalidParam> =>
  intIn(amount, 0, maxMinorUnits) ? Result.succeed(amount) : Result.fail(invalidParam(field, "must be a non-negative amount"))

/** The longest `external_id` (a provider's subscription id: Stripe's `sub_…`, Paddle's `sub_…`, a Lemon Squeezy number). */
export const maxExternalIdLength = 255

/**
 * Checks a subscription's link to its billing provider (CONTRACT §20): an `external_id` needs a provider, and is
 * 1 to 255 characters.
 */
export const checkBillingLink = (
  provider: BillingProvider | null,
  externalId: string | null
): Result.Result<void, InvalidParam> => {
  if (externalId === null) return Result.void
  if (externalId.length === 0 || externalId.length > maxExternalIdLength) {
    return Result.fail(invalidParam("external_id", `must be 1 to ${maxExternalIdLength} characters`))
  }
  return provider === null ? Result.fail(invalidParam("billing_provider", "must be given with external_id")) : Result.void
}

/** Checks items: positive integer quantities and amounts in range. */
export const checkItems = (items: ReadonlyArray<SubscriptionItem>): Result.Result<ReadonlyArray<SubscriptionItem>, InvalidParam> => {
  for (const item of items) {
    if (!intIn(item.quantity, 1, 2_147_483_647)) return Result.fail(invalidParam("items", "each quantity must be a positive integer"))
    if (!intIn(item.amount, 0, maxMinorUnits)) return Result.fail(invalidParam("items", "each amount must be a non-negative amount"))
  }
  return Result.succeed(items)
}

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

type Change = Result.Result<SubscriptionChange, InvalidTransition>

const move = (
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

/** The record of a payment that failed for the period after the current one (no proration, plan unchanged). */
const failedRenewal = (subscription: Subscription, type: "renewal" | "early_renewal", now: number, transactionId: string | null): RenewalDraft => {
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

// ---- the clock's moves ----------------------------------------------------------------------------------

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

// ---- the bound license ----------------------------------------------------------------------------------

/** The bound license as the subscription makes it (its `suspendedBy` says who holds its suspension now). */
export interface LicenseFollow {
  readonly license: License
  /** False when the license was already so and nothing needs writing. */
  readonly changed: boolean
  /** The license's events: suspended, reinstated, expired (ended), or renewed (a new period end). */
  readonly events: ReadonlyArray<DomainEvent>
}

const licenseEvent = (type: DomainEvent["type"], license: License, now: number, data: Record<string, unknown>): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: license.id,
  machineId: null,
  data: { license_key: license.key, ...data }
})

/**
 * How the bound license follows its subscription (CONTRACT §10): its `expires_at` is the current period end;
 * on-hold suspends it (as the subscription's suspension: `suspendedBy` "subscription"); active, trial or
 * pending-cancel again reinstate it only when the subscription holds its suspension, never an administrator's
 * (`applyLicenseAction`'s suspend takes a suspension over); cancelled and expired end it at `now` with no grace
 * (lifting the subscription's own suspension, so that it reports expired). A revoked or terminated license keeps
 * its state.
 */
export const followLicense = (license: License, subscription: Subscription, now: number): LicenseFollow => {
  let state = license.state
  let by = license.suspendedBy
  let expiresAt: number | null = subscription.currentPeriodEnd
  let graceDays = license.graceDays
  const ownSuspension = state === "suspended" && by === "subscription"
  if (subscription.status === "on-hold") {
    if (state === "issued") {
      state = "suspended"
      by = "subscription"
    }
  } else {
    if (isFinal(subscription.status)) {
      expiresAt = Math.min(now, license.expiresAt ?? now)
      graceDays = 0
    }
    // its own suspension gives way to a live subscription, or to the end (so the license reports expired)
    if (ownSuspension) {
      state = "issued"
      by = null
    }
  }
  const changed = state !== license.state || expiresAt !== license.expiresAt || graceDays !== license.graceDays || by !== license.suspendedBy
  if (!changed) return { license, changed: false, events: [] }
  const next: License = { ...license, state, suspendedBy: by, expiresAt, graceDays, updatedAt: now, revision: license.revision + 1 }
  const cause = { subscription_id: subscription.id, from: license.state }
  const events: Array<DomainEvent> = []
  if (state === "suspended" && license.state !== "suspended") events.push(licenseEvent("license.suspended", next, now, cause))
  else if (state === "issued" && license.state === "suspended") events.push(licenseEvent("license.reinstated", next, now, cause))
  if (isFinal(subscription.status)) {
    if (expiresAt !== license.expiresAt || graceDays !== license.graceDays) events.push(licenseEvent("license.expired", next, now, cause))
  } else if (expiresAt !== license.expiresAt) {
    events.push(licenseEvent("license.renewed", next, now, { subscription_id: subscription.id, previous_expires_at: license.expiresAt, expires_at: expiresAt }))
  }
  return { license: next, changed: true, events }
}
