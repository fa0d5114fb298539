/**
 * The subscription state machine of CONTRACT §10 and the rules derived from it: which action is allowed from
 * which status (one table), what each does to the billing period, the renewal record it writes and the events
 * it causes, what the clock makes due, and how the bound license follows. Pure functions of (subscription,
 * command, now) returning the new subscription or the contract's error, like licensing's `license.ts`.
 */
// The parts, by concept: the state table and the change a move makes (`transitions.ts`), the input checks
// (`checks.ts`), the administrator's and the gateway's moves (`actions.ts`), a billing provider's (`provider.ts`),
// the clock's (`clock.ts`) and the bound license (`follow.ts`).
export * from "./actions.js"
export { checkAmount, checkBillingLink, checkInterval, checkItems, maxExternalIdLength, maxTrialDays } from "./checks.js"
export * from "./clock.js"
export * from "./follow.js"
export * from "./provider.js"
export { isFinal, nextStatus, periodAfter, planOf, type SubscriptionChange, transitions } from "./transitions.js"
