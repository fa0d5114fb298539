/** The checks of a subscription's input fields (CONTRACT §10, §20): each the contract's `invalid_params` error. */
import { Result } from "effect"
import { invalidParam, type InvalidParam } from "../shared/errors.js"
import { maxMinorUnits } from "../shared/money.js"
import { maxBillingInterval } from "./billing.js"
import type { BillingProvider, SubscriptionItem } from "./model.js"

/** `trial_days`: 0 to 10 years. */
export const maxTrialDays = 3650

export const intIn = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max

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
