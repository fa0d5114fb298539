/**
 * What a provider event does to its subscription (CONTRACT §20), as pure functions: which subscription-machine
 * move each normalised move is, and the outcome the event gets. The subscription state machine
 * (`subscriptions/subscription.ts`) decides what is allowed; a move it refuses makes the event `ignored`.
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam, type InvalidTransition } from "../shared/errors.js"
import type { Subscription } from "../subscriptions/model.js"
import {
  cancel,
  paidPeriod,
  pause,
  paymentDeclined,
  providerSwitch,
  resume,
  type SubscriptionChange,
  update
} from "../subscriptions/subscription.js"
import type { BillingEventOutcome, BillingMove, ProviderEvent } from "./model.js"

/** The change to write, or null when the event asks for what the subscription already is. */
type Move = Result.Result<SubscriptionChange | null, InvalidTransition | InvalidParam>

const sameCurrency = (subscription: Subscription, currency: string | null): Result.Result<void, InvalidParam> =>
  currency === null || currency === subscription.currency
    ? Result.void
    : Result.fail(invalidParam("currency", `the provider charged ${currency}, the subscription is in ${subscription.currency}`))

/**
 * The subscription move of a provider's move, on the subscription linked to the provider subscription (`newLink`:
 * just now, so that a move that changes nothing else still writes the link).
 */
export const subscriptionMove = (subscription: Subscription, move: BillingMove, now: number, newLink = false): Move => {
  /** Only the link, when it is new; else nothing to write. */
  const link = (): Move => (newLink ? update(subscription, {}, now) : Result.succeed(null))
  switch (move._tag) {
    case "Paid": {
      const currency = sameCurrency(subscription, move.currency)
      if (Result.isFailure(currency)) return Result.fail(currency.failure)
      return paidPeriod(subscription, move, now)
    }
    case "PaymentFailed":
      return paymentDeclined(subscription, now, move.transactionId)
    case "Pause":
      return pause(subscription, now)
    case "Resume":
      return resume(subscription, now)
    case "CancelAtPeriodEnd":
      return cancel(subscription, true, now)
    case "Cancelled":
      return cancel(subscription, false, now)
    case "Switch": {
      const currency = sameCurrency(subscription, move.currency)
      if (Result.isFailure(currency)) return Result.fail(currency.failure)
      const amount = move.amount ?? subscription.amount
      const samePlan = amount === subscription.amount &&
        (move.billingPeriod ?? subscription.billingPeriod) === subscription.billingPeriod &&
        (move.billingInterval ?? subscription.billingInterval) === subscription.billingInterval
      if (!samePlan) return providerSwitch(subscription, { ...move, amount }, now)
      // the same plan: a pending cancel withdrawn at the provider, or nothing new
      return subscription.status === "pending-cancel" ? resume(subscription, now) : link()
    }
    case "Link":
      return link()
  }
}

/**
 * Whether a subscription found by `lm_subscription_id` may take the event: it is not linked to another
 * subscription at a provider.
 */
export const linkable = (subscription: Subscription, event: ProviderEvent): boolean =>
  subscription.externalId === null ||
  (subscription.billingProvider === event.provider && (event.externalId === null || subscription.externalId === event.externalId))

/** The subscription linked to the event's provider subscription (when the event names one). */
export const linked = (subscription: Subscription, event: ProviderEvent): Subscription =>
  event.externalId === null || subscription.externalId !== null
    ? subscription
    : { ...subscription, billingProvider: event.provider, externalId: event.externalId }

/** What a matched event does, given the provider timestamp of the last one applied to its subscription. */
export type Decision =
  | { readonly outcome: Extract<BillingEventOutcome, "stale" | "ignored"> }
  | { readonly outcome: "applied"; readonly change: SubscriptionChange | null }

/**
 * Decides a matched event: older than the newest applied to its subscription (the provider's own timestamps) →
 * `stale`; a type that moves nothing, or a move the state machine refuses → `ignored`; else `applied` with the
 * change to write (the subscription linked to the provider subscription on the way).
 */
export const decide = (subscription: Subscription, event: ProviderEvent, lastAppliedAt: number | null, now: number): Decision => {
  if (lastAppliedAt !== null && event.occurredAt < lastAppliedAt) return { outcome: "stale" }
  if (event.move === null) return { outcome: "ignored" }
  const link = linked(subscription, event)
  const change = subscriptionMove(link, event.move, now, link !== subscription)
  return Result.isFailure(change) ? { outcome: "ignored" } : { outcome: "applied", change: change.success }
}
