/**
 * The licensing engine: every service of the domain, the signing keys and their node:crypto signer, signed
 * tokens, the CRL, the validation cache, the seat-change group commit, the blacklist and the background sweep,
 * composed once on a store. The bundled HTTP server, the `lm` CLI, the benchmarks and an embedding backend all
 * build on {@link layer}.
 *
 * ```ts
 * const engine = Engine.layer(MemoryStore.layer, { sweepIntervalSeconds: 0 })
 * Effect.runPromise(program.pipe(Effect.provide(engine), Effect.scoped))
 * ```
 */
import { Layer, type Redacted } from "effect"
import type { ActivityRecorderOptions } from "./activity/ActivityRecorder.js"
import { ActivityRecorder } from "./activity/ActivityRecorder.js"
import type { AnomalyThresholds } from "./analytics/rules.js"
import { Analytics, AnalyticsSettings, layerSubscriptionFigures } from "./analytics/Analytics.js"
import { ApiKeys } from "./access/ApiKeys.js"
import { Blacklist, blacklistFromEntries } from "./access/Blacklist.js"
import * as EventRetention from "./activity/EventRetention.js"
import { Generators } from "./generators/Generators.js"
import { Licenses } from "./licensing/Licenses.js"
import { Licensing } from "./licensing/Licensing.js"
import { Machines } from "./licensing/Machines.js"
import { RateLimiter, type RateLimiterOptions } from "./access/RateLimiter.js"
import { Releases } from "./releases/Releases.js"
import { RevocationList } from "./licensing/RevocationList.js"
import { SeatBatchSettings } from "./licensing/SeatBatches.js"
import { SigningKeys } from "./signing/SigningKeys.js"
import { RequestLoad } from "./shared/background.js"
import { Subscriptions, SubscriptionSettings } from "./subscriptions/Subscriptions.js"
import { Sweeper } from "./licensing/Sweeper.js"
import { Tokens } from "./licensing/Tokens.js"
import { layerValidationCache, type ValidationCacheOptions } from "./licensing/ValidationCache.js"
import { WebhookSender, Webhooks, WebhookSettings, type WebhookSettingsShape } from "./webhooks/Webhooks.js"
import type * as Ports from "./ports.js"
import { Random } from "./shared/random.js"
import { defaultRateLimitSettings, type RateLimitSettings } from "./access/rateLimit.js"
import { MasterKey } from "./signing/secrets.js"

/** Every port a store layer provides (see `Ports.StorePorts`). */
export type StorePorts = Ports.StorePorts

/** Settings of the engine; every one has a default. */
export interface Options {
  /**
   * The key that seals secrets at rest (the signing seed). Without it a random one serves for the life of the
   * process: fine for a store that keeps nothing, while a durable store sealed with it refuses to open later.
   */
  readonly masterKey?: Redacted.Redacted<Uint8Array> | undefined
  /** Base64 of a 32-byte Ed25519 seed; without it one is generated on first start and kept in the store. */
  readonly signingKey?: Redacted.Redacted<string> | undefined
  /** Seconds a signed validation stays usable offline (`exp`; default 7 days). */
  readonly offlineTtlSeconds?: number | undefined
  /** Refused outright with `blacklisted`: entries `key:…`, `fp:…`, `ip:…`. */
  readonly blacklist?: ReadonlyArray<string> | undefined
  /** Seconds between background sweeps of expired leases and dead heartbeats (default 30); 0 turns it off. */
  readonly sweepIntervalSeconds?: number | undefined
  /**
   * Transactions of grouped seat changes that may run at once (default 2, see `SeatBatchSettings`); 0 runs every
   * activation, deactivation and heartbeat in its own transaction.
   */
  readonly seatBatchWorkers?: number | undefined
  /**
   * Days the event log keeps an entry (default 90; fractions allowed); older entries are deleted in the
   * background, in small batches, every hour or every tenth of the window when that is shorter (see
   * `Services.EventRetention`). 0 keeps every entry.
   */
  readonly eventRetentionDays?: number | undefined
  /** How the event log is buffered before it is written (see `ActivityRecorder`). */
  readonly activity?: ActivityRecorderOptions | undefined
  /** Webhooks: their HTTP client, reach, retries and how often the outbox is read (see {@link WebhookOptions}). */
  readonly webhooks?: WebhookOptions | undefined
  /** Thresholds of the anomaly rules (CONTRACT §11); each one not given keeps its default. */
  readonly anomalyThresholds?: { readonly [K in keyof AnomalyThresholds]?: AnomalyThresholds[K] | undefined } | undefined
  /**
   * Seconds between background runs of the anomaly rules (default 60; also once at start): each newly detected
   * anomaly is announced with `anomaly.detected`, once across every process on the store. 0 turns it off (then
   * only GET /analytics/anomalies detects them).
   */
  readonly anomalyIntervalSeconds?: number | undefined
  /** Seconds a release download token stays valid (default 300). */
  readonly downloadTokenTtlSeconds?: number | undefined
  /** Size and age bounds of the validation cache. */
  readonly validationCache?: ValidationCacheOptions | undefined
  /** Days after an unpaid period end before a subscription goes on-hold (`LM_PAYMENT_GRACE_DAYS`, default 3). */
  readonly paymentGraceDays?: number | undefined
  /**
   * Seconds between runs of the subscriptions' period-end job (default 60; it also runs at once on start, so
   * moves missed while the server was down are made then); 0 turns it off.
   */
  readonly subscriptionJobIntervalSeconds?: number | undefined
  /**
   * Rate limits (see `RateLimiter`): off unless given (the bundled server reads `LM_RATE_LIMIT*`). Shared between
   * processes when the store (or a layer over it) provides `Ports.SharedRateLimits`.
   */
  readonly rateLimits?: RateLimitOptions | undefined
  /**
   * How many requests the process has started so far (the HTTP server counts them): batched background jobs
   * (webhook fan-out and delivery, the period-end job) yield to requests while it moves (`RequestLoad`).
   */
  readonly requestsStarted?: (() => number) | undefined
}

/** The rate limits and how often shared buckets are reconciled. */
export interface RateLimitOptions extends RateLimiterOptions {
  readonly settings: RateLimitSettings
}

/** Seconds between runs of the subscriptions' period-end job when none is given. */
export const defaultSubscriptionJobIntervalSeconds = 60

type WebhookSettingsGiven = { readonly [K in keyof WebhookSettingsShape]?: WebhookSettingsShape[K] | undefined }

/** Settings of webhook delivery. */
export interface WebhookOptions extends WebhookSettingsGiven {
  /**
   * The HTTP client of deliveries (the bundled server's: undici, forbidden addresses refused at connect time).
   * Without it nothing is delivered in the background: events wait in the outbox for an engine that has one
   * (`Webhooks.ping` reports that no client is configured).
   */
  readonly sender?: (typeof WebhookSender)["Service"] | undefined
  /** Milliseconds between reads of the outbox and the delivery queue (default 500); 0 turns background delivery off. */
  readonly pollMillis?: number | undefined
}

/** How often delivery looks for new events and due deliveries when not told. */
export const defaultWebhookPollMillis = 500

/** Seconds between background runs of the anomaly rules when none is given. */
export const defaultAnomalyIntervalSeconds = 60

/** The sweep interval when none is given. */
export const defaultSweepIntervalSeconds = 30

/** The event log's retention when none is given. */
export const defaultEventRetentionDays = 90

/** The fields of `o` that are given. */
const definedOf = <A extends object>(o: { readonly [K in keyof A]?: A[K] | undefined }): Partial<A> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<A>

/** The webhook client and settings given, over the defaults. */
const webhookSettingsLayer = (options: WebhookOptions | undefined) => {
  const { sender, pollMillis: _, ...settings } = options ?? {}
  const defined = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined))
  return Layer.mergeAll(
    Layer.succeed(WebhookSettings, { ...WebhookSettings.defaultValue(), ...defined }),
    sender === undefined ? Layer.empty : Layer.succeed(WebhookSender, sender)
  )
}

/**
 * The domain's services on the ports, without signing, the cache or the sweep: what a test on a throw-away
 * store needs. Needs the ports and `Random`.
 */
export const services = (options: { readonly activity?: ActivityRecorderOptions | undefined } = {}) =>
  Analytics.layer.pipe(
    Layer.provide(layerSubscriptionFigures),
    Layer.provideMerge(Layer.mergeAll(Licenses.layer, Machines.layer, Generators.layer, ApiKeys.layer, Sweeper.layer)),
    Layer.provideMerge(Subscriptions.layer.pipe(Layer.provideMerge(Licenses.layer))),
    Layer.provideMerge(Licensing.layer),
    Layer.provideMerge(ActivityRecorder.layer(options.activity)),
    Layer.provideMerge(Generators.layerIssuer)
  )

/**
 * The whole engine on `store`: the services of {@link services}, stored signing keys (sealed with the master
 * key) with a node:crypto signer,
 * signed tokens and the CRL, cryptographic randomness, the blacklist, the seat-change group commit, the
 * validation cache in front of the store, and (unless `sweepIntervalSeconds` is 0) the background sweep and
 * (unless `eventRetentionDays` is 0) the event log's retention, and webhooks (delivered in the background when
 * `webhooks.sender` is given). Opening the layer opens the store; closing it stops the sweep, the retention and
 * delivery, flushes the event log and closes the store, in that order.
 */
export const layer = <E, R>(store: Layer.Layer<StorePorts, E, R>, options: Options = {}) => {
  const core = Releases.layer({ downloadTokenTtlSeconds: options.downloadTokenTtlSeconds }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      RateLimiter.layer(
        options.rateLimits?.settings ?? { ...defaultRateLimitSettings, enabled: false },
        options.rateLimits ?? {}
      ).pipe(Layer.provideMerge(services({ activity: options.activity }))),
      Tokens.layer({ offlineTtlSeconds: options.offlineTtlSeconds }),
      RevocationList.layer(),
      Webhooks.layer
    )),
    Layer.provideMerge(SigningKeys.layer({ signingKey: options.signingKey })),
    Layer.provideMerge(webhookSettingsLayer(options.webhooks)),
    Layer.provideMerge(
      options.requestsStarted === undefined
        ? Layer.empty
        : Layer.succeed(RequestLoad, { ...RequestLoad.defaultValue(), requestsStarted: options.requestsStarted })
    ),
    Layer.provideMerge(
      options.anomalyThresholds === undefined
        ? Layer.empty
        : Layer.succeed(AnalyticsSettings, { ...AnalyticsSettings.defaultValue(), ...definedOf<AnomalyThresholds>(options.anomalyThresholds) })
    ),
    Layer.provideMerge(options.masterKey === undefined ? MasterKey.layerEphemeral : MasterKey.layer(options.masterKey)),
    Layer.provideMerge(Random.layerCrypto),
    Layer.provideMerge(Layer.succeed(Blacklist, blacklistFromEntries(options.blacklist ?? []))),
    Layer.provideMerge(
      options.paymentGraceDays === undefined
        ? Layer.empty
        : Layer.succeed(SubscriptionSettings, { paymentGraceDays: options.paymentGraceDays })
    ),
    Layer.provideMerge(
      options.seatBatchWorkers === undefined
        ? Layer.empty
        : Layer.succeed(SeatBatchSettings, { ...SeatBatchSettings.defaultValue(), workers: Math.max(0, options.seatBatchWorkers) })
    )
  )
  const interval = options.sweepIntervalSeconds ?? defaultSweepIntervalSeconds
  const retentionDays = options.eventRetentionDays ?? defaultEventRetentionDays
  const webhookPoll = options.webhooks?.pollMillis ?? defaultWebhookPollMillis
  const subscriptionJob = options.subscriptionJobIntervalSeconds ?? defaultSubscriptionJobIntervalSeconds
  const anomalyInterval = options.anomalyIntervalSeconds ?? defaultAnomalyIntervalSeconds
  const background = Layer.mergeAll(
    anomalyInterval > 0 ? Analytics.layerBackground(`${Math.round(anomalyInterval * 1000)} millis`) : Layer.empty,
    interval > 0 ? Sweeper.layerBackground(`${interval} seconds`) : Layer.empty,
    webhookPoll > 0 && options.webhooks?.sender !== undefined ? Webhooks.layerBackground(`${webhookPoll} millis`) : Layer.empty,
    retentionDays > 0 ? EventRetention.layerBackground({ days: retentionDays }) : Layer.empty,
    subscriptionJob > 0 ? Subscriptions.layerBackground(`${subscriptionJob} seconds`) : Layer.empty
  )
  // Validation reads go through an in-memory cache kept coherent with every write (and, on PostgreSQL, with
  // other processes' writes through LISTEN/NOTIFY), so the validate hot path needs no store round trip.
  const cachedStore = layerValidationCache(options.validationCache).pipe(Layer.provideMerge(store))
  return background.pipe(Layer.provideMerge(core), Layer.provideMerge(cachedStore))
}
