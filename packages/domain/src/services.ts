/**
 * Everything the service modules export besides their service tags (which `@lm/domain` exports by name): the
 * inputs and results of their methods, their options, and the small helpers beside them. Reached as
 * `Services.…` from `@lm/domain`.
 */
export * from "./activity/ActivityRecorder.js"
export * from "./audit/AuditLog.js"
export * from "./access/ApiKeys.js"
export * from "./access/Blacklist.js"
export { RequestLoad } from "./shared/background.js"
export * as EventRetention from "./activity/EventRetention.js"
export * from "./generators/Generators.js"
export * from "./licensing/Licenses.js"
export * from "./licensing/Licensing.js"
export * from "./licensing/Machines.js"
export * from "./policies/Policies.js"
export * from "./access/RateLimiter.js"
export * from "./licensing/RevocationList.js"
export { type SeatBatchOptions, SeatBatchSettings } from "./licensing/SeatBatches.js"
export * from "./signing/SigningKeys.js"
export * from "./subscriptions/Subscriptions.js"
export * from "./billing/BillingEvents.js"
export * from "./licensing/Sweeper.js"
export * from "./licensing/Tokens.js"
export * from "./licensing/ValidationCache.js"
export * from "./webhooks/Webhooks.js"
export * from "./analytics/Analytics.js"
export * from "./releases/Releases.js"
export * from "./idempotency/Idempotency.js"
