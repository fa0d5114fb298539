/**
 * @lm/domain — the licensing engine: business rules as pure functions, services that orchestrate them over
 * ports, and the errors and events of the contract. Depends on `effect` only (plus node:crypto and
 * @noble/ed25519 for signing, and `semver` for release versions); stores and the HTTP adapter plug in from outside.
 *
 * The surface is grouped like `effect`'s own: one namespace per module, and the service tags by name.
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
export * as Analytics from "./analytics.js"
export * as Billing from "./billing.js"
export * as Engine from "./Engine.js"
export * as Errors from "./errors.js"
export * as Keys from "./keys.js"
export * as License from "./license.js"
export * as Machine from "./machine.js"
export * as Model from "./model.js"
export * as Money from "./money.js"
export * as Ports from "./ports.js"
export * as ReleaseRules from "./release.js"
export * as Secrets from "./secrets.js"
export * as Services from "./services/index.js"
export * as Subscription from "./subscription.js"
export * as SigningKey from "./signing/SigningKey.js"
export * as Token from "./signing/Token.js"
export * as RateLimit from "./rateLimit.js"
export * as Validation from "./validation.js"
export * as Webhook from "./webhook.js"

export { Random } from "./random.js"
export { RateLimiter } from "./services/RateLimiter.js"
export { MasterKey } from "./secrets.js"
export { ActivityRecorder } from "./services/ActivityRecorder.js"
export { ApiKeys } from "./services/ApiKeys.js"
export { Blacklist } from "./services/Blacklist.js"
export { Generators } from "./services/Generators.js"
export { Licenses } from "./services/Licenses.js"
export { Licensing } from "./services/Licensing.js"
export { Machines } from "./services/Machines.js"
export { Releases } from "./services/Releases.js"
export { RevocationList } from "./services/RevocationList.js"
export { SeatBatchSettings } from "./services/SeatBatches.js"
export { SigningKeys } from "./services/SigningKeys.js"
export { Subscriptions } from "./services/Subscriptions.js"
export { Sweeper } from "./services/Sweeper.js"
export { Tokens } from "./services/Tokens.js"
export { Webhooks } from "./services/Webhooks.js"
export { Signer } from "./signing/Signer.js"
