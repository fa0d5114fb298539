/**
 * @lm/domain — the licensing engine: business rules as pure functions, services that orchestrate them over
 * ports, and the errors and events of the contract. Depends on `effect` only (plus node:crypto and
 * @noble/ed25519 for signing, and `semver` for release versions); stores and the HTTP adapter plug in from outside.
 *
 * The surface is grouped like `effect`'s own: one namespace per module, and the service tags by name. The code
 * lives in one folder per feature (`licensing/`, `subscriptions/`, ...; see the package README); `Model`,
 * `Errors`, `Ports` and `Services` compose the features' modules.
 * - `Engine` — the whole engine on a store (`Engine.layer`), what embedders and the bundled server use.
 * - Services — `Licensing` (validate, activate, deactivate, heartbeat), `Licenses`, `Machines`, `Generators`,
 *   `ApiKeys`, `SigningKeys`, `Tokens`, `RevocationList`, `Sweeper`, …; their inputs, results and helpers under
 *   `Services`.
 * - `Model` (records, literal lists, events), `Errors` (the contract's refusals), `Ports` (what a store
 *   implements).
 * - The pure core: `License`, `Machine`, `Validation`, `Keys`.
 * - Signing: `Signer` (the service), `SigningKey`, `Token` (the signed formats); `Secrets` and its
 *   `MasterKey`, which seals secrets at rest. Offline verification for
 *   client software is the separate entry point `@lm/domain/verify`.
 */
export * as Analytics from "./analytics/rules.js"
export * as Billing from "./subscriptions/billing.js"
export * as ProviderBilling from "./billing/billing.js"
export * as Engine from "./Engine.js"
export * as Errors from "./errors.js"
export * as IdempotencyRules from "./idempotency/idempotencyKey.js"
export * as Keys from "./licensing/keys.js"
export * as License from "./licensing/license.js"
export * as Machine from "./licensing/machine.js"
export * as Metrics from "./shared/metrics.js"
export * as Model from "./model.js"
export * as Policy from "./policies/policy.js"
export * as Entitlements from "./licensing/entitlements.js"
export * as Money from "./shared/money.js"
export * as Ports from "./ports.js"
export * as ReleaseRules from "./releases/release.js"
export * as Secrets from "./signing/secrets.js"
export * as Services from "./services.js"
export * as Subscription from "./subscriptions/subscription.js"
export * as SigningKey from "./signing/SigningKey.js"
export * as Token from "./signing/Token.js"
export * as RateLimit from "./access/rateLimit.js"
export * as Validation from "./licensing/validation.js"
export * as Wplm from "./licensing/wplm.js"
export * as Importing from "./licensing/importing.js"
export * as Webhook from "./webhooks/webhook.js"

export { Random } from "./shared/random.js"
export { RateLimiter } from "./access/RateLimiter.js"
export { MasterKey } from "./signing/secrets.js"
export { ActivityRecorder } from "./activity/ActivityRecorder.js"
export { ApiKeys } from "./access/ApiKeys.js"
export { AuditLog } from "./audit/AuditLog.js"
export { Blacklist } from "./access/Blacklist.js"
export { BillingEvents } from "./billing/BillingEvents.js"
export { Idempotency } from "./idempotency/Idempotency.js"
export { Generators } from "./generators/Generators.js"
export { Licenses } from "./licensing/Licenses.js"
export { Licensing } from "./licensing/Licensing.js"
export { Machines } from "./licensing/Machines.js"
export { Policies } from "./policies/Policies.js"
export { Releases } from "./releases/Releases.js"
export { RevocationList } from "./licensing/RevocationList.js"
export { SeatBatchSettings } from "./licensing/SeatBatches.js"
export { SigningKeys } from "./signing/SigningKeys.js"
export { Subscriptions } from "./subscriptions/Subscriptions.js"
export { Sweeper } from "./licensing/Sweeper.js"
export { Tokens } from "./licensing/Tokens.js"
export { Webhooks } from "./webhooks/Webhooks.js"
export { Signer } from "./signing/Signer.js"
