/**
 * The domain's data, reached as `Model` (also from `@lm/domain/core`): each feature's records and literal lists,
 * composed here. Times are epoch milliseconds (UTC); the HTTP adapter writes them as ISO 8601. Durations are whole
 * seconds, as on the wire.
 */
export * from "./shared/model.js"
export * from "./activity/model.js"
export * from "./audit/model.js"
export * from "./access/model.js"
export * from "./signing/model.js"
export * from "./licensing/model.js"
export * from "./generators/model.js"
export * from "./policies/model.js"
export * from "./subscriptions/model.js"
export * from "./billing/model.js"
export * from "./analytics/model.js"
export * from "./releases/model.js"
export * from "./webhooks/model.js"
export * from "./webhooks/events.js"
export * from "./idempotency/model.js"
