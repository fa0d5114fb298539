/**
 * Everything the service modules export besides their service tags (which `@lm/domain` exports by name): the
 * inputs and results of their methods, their options, and the small helpers beside them. Reached as
 * `Services.…` from `@lm/domain`.
 */
export * from "./ActivityRecorder.js"
export * from "./ApiKeys.js"
export * from "./Blacklist.js"
export { RequestLoad } from "./background.js"
export * as EventRetention from "./EventRetention.js"
export * from "./Generators.js"
export * from "./Licenses.js"
export * from "./Licensing.js"
export * from "./Machines.js"
export * from "./RateLimiter.js"
export * from "./RevocationList.js"
export { type SeatBatchOptions, SeatBatchSettings } from "./SeatBatches.js"
export * from "./SigningKeys.js"
export * from "./Subscriptions.js"
export * from "./Sweeper.js"
export * from "./Tokens.js"
export * from "./ValidationCache.js"
export * from "./Webhooks.js"
export * from "./Analytics.js"
export * from "./Releases.js"
