/**
 * The licensing engine: every feature of the domain composed once on a store — signing keys and their
 * node:crypto signer, the event log, API keys, rate limits and the blacklist, key generators, the client calls
 * with their signed tokens, the CRL and the seat-change group commit, subscriptions, analytics, releases and
 * webhooks, each with its background jobs — with the validation cache in front of the store. The bundled HTTP
 * server, the `lm` CLI, the benchmarks and an embedding backend all build on {@link layer}.
 *
 * ```ts
 * const engine = Engine.layer(MemoryStore.layer, { sweepIntervalSeconds: 0 })
 * Effect.runPromise(program.pipe(Effect.provide(engine), Effect.scoped))
 * ```
 */
import { Layer } from "effect"
import { pipe } from "effect/Function"
import * as Access from "./access/feature.js"
import * as Activity from "./activity/feature.js"
import * as Analytics from "./analytics/feature.js"
import { layerAuditedStore } from "./audit/AuditLog.js"
import * as Audit from "./audit/feature.js"
import * as Billing from "./billing/feature.js"
import * as Generators from "./generators/feature.js"
import * as Idempotency from "./idempotency/feature.js"
import * as Licensing from "./licensing/feature.js"
import * as Policies from "./policies/feature.js"
import { layerValidationCache, type ValidationCacheOptions } from "./licensing/ValidationCache.js"
import type * as Ports from "./ports.js"
import * as Releases from "./releases/feature.js"
import { RequestLoad } from "./shared/background.js"
import { addFeature, type Feature } from "./shared/feature.js"
import { Random } from "./shared/random.js"
import * as Signing from "./signing/feature.js"
import * as Subscriptions from "./subscriptions/feature.js"
import * as Webhooks from "./webhooks/feature.js"

export type { RateLimitOptions } from "./access/feature.js"
export type { WebhookOptions } from "./webhooks/feature.js"
export { defaultEventRetentionDays } from "./activity/feature.js"
export { defaultAnomalyIntervalSeconds } from "./analytics/feature.js"
export { defaultSweepIntervalSeconds } from "./licensing/feature.js"
export { defaultSubscriptionJobIntervalSeconds } from "./subscriptions/feature.js"
export { defaultWebhookPollMillis } from "./webhooks/feature.js"

/** Every port a store layer provides (see `Ports.StorePorts`). */
export type StorePorts = Ports.StorePorts

/** Settings of the engine, each feature's; every one has a default. */
export interface Options
  extends
    Signing.SigningOptions,
    Activity.ActivityOptions,
    Access.AccessOptions,
    Licensing.LicensingOptions,
    Subscriptions.SubscriptionsOptions,
    Analytics.AnalyticsOptions,
    Releases.ReleasesFeatureOptions,
    Webhooks.WebhooksOptions
{
  /** Size and age bounds of the validation cache. */
  readonly validationCache?: ValidationCacheOptions | undefined
  /**
   * How many requests the process has started so far (the HTTP server counts them): batched background jobs
   * (webhook fan-out and delivery, the period-end job) yield to requests while it moves (`RequestLoad`).
   */
  readonly requestsStarted?: (() => number) | undefined
}

/**
 * The features on `signing`, each after the ones it builds on: it is built with their services (the generators
 * come before licensing, whose license creation draws from them). A new feature is one line here.
 */
const features = <A, E, R>(signing: Feature<A, E, R, never>, options: Options) =>
  pipe(
    signing,
    addFeature(Activity.feature(options)),
    addFeature(Audit.feature(options)),
    addFeature(Access.feature(options)),
    addFeature(Generators.feature),
    addFeature(Licensing.feature(options)),
    addFeature(Policies.feature),
    addFeature(Subscriptions.feature(options)),
    addFeature(Billing.feature),
    addFeature(Analytics.feature(options)),
    addFeature(Releases.feature(options)),
    addFeature(Webhooks.feature(options)),
    addFeature(Idempotency.feature)
  )

/**
 * The domain's services on the ports, without stored signing keys (a `Signer` with a fresh key of its own), the
 * validation cache or background jobs: what a test on a throw-away store needs. Needs the ports and `Random`.
 */
export const services = (options: Options = {}) =>
  features(Signing.ephemeral, options).services.pipe(Layer.provideMerge(layerAuditedStore))

/**
 * The whole engine on `store`: every feature's services, stored signing keys (sealed with the master key) with a
 * node:crypto signer, cryptographic randomness, the validation cache in front of the store, and the features'
 * background jobs: the sweep (unless `sweepIntervalSeconds` is 0), the event log's retention (unless
 * `eventRetentionDays` is 0), the period-end job, the anomaly rules, and webhook delivery (when
 * `webhooks.sender` is given). Opening the layer opens the store; closing it stops the background jobs, flushes
 * the event log and closes the store, in that order.
 */
export const layer = <E, R>(store: Layer.Layer<StorePorts, E, R>, options: Options = {}) => {
  const engine = features(Signing.feature(options), options)
  const base = Layer.mergeAll(
    Random.layerCrypto,
    options.requestsStarted === undefined
      ? Layer.empty
      : Layer.succeed(RequestLoad, { ...RequestLoad.defaultValue(), requestsStarted: options.requestsStarted })
  )
  // Validation reads go through an in-memory cache kept coherent with every write (and, on PostgreSQL, with
  // other processes' writes through LISTEN/NOTIFY), so the validate hot path needs no store round trip.
  // Management writes append their audit entry in their own transaction (see `AuditLog`).
  const cachedStore = layerAuditedStore.pipe(
    Layer.provideMerge(layerValidationCache(options.validationCache).pipe(Layer.provideMerge(store)))
  )
  return engine.background.pipe(
    Layer.provideMerge(engine.services),
    Layer.provideMerge(base),
    Layer.provideMerge(cachedStore)
  )
}
