/**
 * The engine's settings (`Engine.Options`) from the environment: the signing and master keys, the background
 * jobs' intervals, webhooks, rate limits and their Redis, the anomaly thresholds.
 */
import { Config, Effect, Option, Redacted, Result } from "effect"
import { Engine, RateLimit, Services, Webhook } from "@lm/domain"
import { InvalidSetting } from "@lm/http"
import type { StoreChoice } from "../Store.js"
import { masterKeyFromEnv } from "./MasterKey.js"
import { parseSwitch, positiveInt, readSetting } from "./Read.js"

/**
 * The webhook settings from the environment: `LM_WEBHOOK_ALLOW_INSECURE` (http URLs), `LM_WEBHOOK_ALLOW_PRIVATE`
 * (loopback, private and link-local addresses), `LM_WEBHOOK_RETRY_SCHEDULE` (seconds, comma separated),
 * `LM_WEBHOOK_TIMEOUT` (seconds an attempt may take, default 10; a worker's claim on a delivery lasts twice that
 * plus 5 s, after which a crashed worker's deliveries are attempted again).
 */
export const webhookOptionsFromEnv = Effect.gen(function*() {
  const { allowInsecure, allowPrivate } = Webhook.webhookReachSettings
  const insecure = yield* Config.String(allowInsecure).pipe(Config.withDefault(""))
  const privateAddresses = yield* Config.String(allowPrivate).pipe(Config.withDefault(""))
  const schedule = yield* Config.String("LM_WEBHOOK_RETRY_SCHEDULE").pipe(Config.option)
  const timeout = yield* Config.Int("LM_WEBHOOK_TIMEOUT").pipe(Config.option)
  return {
    attemptTimeoutMillis: Option.isSome(timeout) ? Math.max(1, timeout.value) * 1000 : undefined,
    leaseMillis: Option.isSome(timeout) ? Webhook.leaseMillisFor(Math.max(1, timeout.value) * 1000) : undefined,
    allowInsecure: yield* readSetting(allowInsecure, () => parseSwitch(insecure, false)),
    allowPrivate: yield* readSetting(allowPrivate, () => parseSwitch(privateAddresses, false)),
    retrySchedule: Option.isNone(schedule)
      ? undefined
      : yield* readSetting("LM_WEBHOOK_RETRY_SCHEDULE", () => Result.getOrThrowWith(Webhook.parseRetrySchedule(schedule.value), (m) => new Error(m)))
  } satisfies Engine.WebhookOptions
})

/**
 * The anomaly thresholds from the environment (CONTRACT §11; each unset one keeps its default):
 * `LM_ANOMALY_FINGERPRINT_CHURN` (5), `LM_ANOMALY_IP_CHURN` (10), `LM_ANOMALY_SPIKE_FACTOR` (3),
 * `LM_ANOMALY_SPIKE_MINIMUM` (20), `LM_ANOMALY_FAILED_BURST` (20). Each must be a positive number.
 */
export const anomalyThresholdsFromEnv = Effect.gen(function*() {
  const positive = (name: string, integer: boolean) =>
    Effect.flatMap((integer ? Config.Int(name) : Config.Number(name)).pipe(Config.option), (value) =>
      Option.isNone(value)
        ? Effect.succeed(undefined)
        : readSetting(name, () => {
          if (!(value.value > 0)) throw new Error("must be a positive number")
          return value.value
        }))
  return {
    fingerprintChurn: yield* positive("LM_ANOMALY_FINGERPRINT_CHURN", true),
    ipChurn: yield* positive("LM_ANOMALY_IP_CHURN", true),
    spikeFactor: yield* positive("LM_ANOMALY_SPIKE_FACTOR", false),
    spikeMinimum: yield* positive("LM_ANOMALY_SPIKE_MINIMUM", true),
    failedBurst: yield* positive("LM_ANOMALY_FAILED_BURST", true)
  }
})

/** How often a server reconciles its buckets with the shared ones when not told (`LM_RATE_LIMIT_SYNC_MS`). */
export const defaultSyncEveryMillis = 200

/**
 * The limits from the environment: `LM_RATE_LIMIT` (on by default; `off` disables every limit),
 * `LM_RATE_LIMIT_PER_IP` (120), `LM_RATE_LIMIT_PER_KEY` (60), `LM_RATE_LIMIT_PER_API_KEY` (600) requests a
 * minute and `LM_RATE_LIMIT_AUTH_FAILURES` (10) failed management logins a minute per client IP, each also the
 * burst; `LM_RATE_LIMIT_SYNC_MS` (200), how often buckets shared between processes are reconciled.
 */
export const rateLimitsFromEnv: Effect.Effect<
  Engine.RateLimitOptions,
  Config.ConfigError | InvalidSetting
> = Effect.gen(function*() {
  const enabled = yield* Config.String("LM_RATE_LIMIT").pipe(Config.withDefault(""))
  const defaults = RateLimit.defaultRateLimitSettings
  const settings: RateLimit.RateLimitSettings = {
    enabled: yield* readSetting("LM_RATE_LIMIT", () => parseSwitch(enabled, true)),
    perIp: { perMinute: yield* positiveInt("LM_RATE_LIMIT_PER_IP", defaults.perIp.perMinute) },
    perKey: { perMinute: yield* positiveInt("LM_RATE_LIMIT_PER_KEY", defaults.perKey.perMinute) },
    perApiKey: { perMinute: yield* positiveInt("LM_RATE_LIMIT_PER_API_KEY", defaults.perApiKey.perMinute) },
    authFailures: { perMinute: yield* positiveInt("LM_RATE_LIMIT_AUTH_FAILURES", defaults.authFailures.perMinute) }
  }
  const syncEveryMillis = yield* positiveInt("LM_RATE_LIMIT_SYNC_MS", defaultSyncEveryMillis)
  return { settings, syncEveryMillis }
})

/**
 * `LM_REDIS_URL`: when set, rate limits are shared through this Redis (else through PostgreSQL when that is the
 * store). A `redis://` or `rediss://` URL; anything else refuses the start (the text is not shown: it may hold a
 * password).
 */
export const redisUrlFromEnv: Effect.Effect<Redacted.Redacted | undefined, Config.ConfigError | InvalidSetting> = Effect.flatMap(
  Config.Redacted("LM_REDIS_URL").pipe(Config.option),
  (url) => {
    if (Option.isNone(url) || Redacted.value(url.value).trim() === "") return Effect.succeed(undefined)
    return readSetting("LM_REDIS_URL", () => {
      const protocol = URL.parse(Redacted.value(url.value).trim())?.protocol
      if (protocol !== "redis:" && protocol !== "rediss:") throw new Error("expected a URL such as redis://host:6379")
      return url.value
    })
  }
)

/** The engine's settings from the environment: `LM_SIGNING_KEY`, `LM_OFFLINE_TTL`, `LM_BLACKLIST` (comma
 * separated), `LM_SWEEP_INTERVAL`, `LM_SEAT_BATCH_WORKERS`, `LM_EVENT_RETENTION_DAYS`, `LM_FEED_STALE_MS`,
 * `LM_PAYMENT_GRACE_DAYS`, `LM_SUBSCRIPTION_JOB_INTERVAL`, `LM_ANOMALY_INTERVAL`, `LM_DOWNLOAD_TOKEN_TTL`, the webhook settings, the rate
 * limits (`LM_RATE_LIMIT*`, {@link rateLimitsFromEnv}) and the anomaly thresholds (see `Engine.Options`). */
export const engineOptionsFromEnv = (choice: StoreChoice) => Effect.gen(function*() {
  const masterKey = yield* masterKeyFromEnv(choice)
  const signingKey = yield* Config.Redacted("LM_SIGNING_KEY").pipe(Config.option)
  const offline = yield* Config.Int("LM_OFFLINE_TTL").pipe(Config.option)
  const blacklist = yield* Config.String("LM_BLACKLIST").pipe(Config.withDefault(""))
  const sweep = yield* Config.Int("LM_SWEEP_INTERVAL").pipe(Config.withDefault(Engine.defaultSweepIntervalSeconds))
  const seatBatchWorkers = yield* Config.Int("LM_SEAT_BATCH_WORKERS").pipe(Config.option)
  // A number of days, fractions allowed (0.01 is 14.4 minutes: short windows for tests and benches).
  const eventRetentionDays = yield* Config.Number("LM_EVENT_RETENTION_DAYS").pipe(Config.withDefault(Engine.defaultEventRetentionDays))
  const webhooks = yield* webhookOptionsFromEnv
  const feedStaleMillis = yield* Config.Int("LM_FEED_STALE_MS").pipe(Config.withDefault(Services.defaultFeedStaleMillis))
  if (feedStaleMillis < Services.minFeedStaleMillis) {
    return yield* new InvalidSetting({
      name: "LM_FEED_STALE_MS",
      message: `LM_FEED_STALE_MS: expected at least ${Services.minFeedStaleMillis} (two change feed heartbeats), got ${feedStaleMillis}`
    })
  }
  // Days after an unpaid period end before a subscription goes on-hold (fractions allowed, for tests).
  const paymentGraceDays = yield* Config.Number("LM_PAYMENT_GRACE_DAYS").pipe(Config.option)
  const subscriptionJob = yield* Config.Int("LM_SUBSCRIPTION_JOB_INTERVAL").pipe(Config.option)
  const anomalyInterval = yield* Config.Number("LM_ANOMALY_INTERVAL").pipe(Config.option)
  if (Option.isSome(anomalyInterval) && !(anomalyInterval.value >= 0 && Number.isFinite(anomalyInterval.value))) {
    return yield* new InvalidSetting({ name: "LM_ANOMALY_INTERVAL", message: "LM_ANOMALY_INTERVAL: expected a number of seconds, 0 (off) or more" })
  }
  const rateLimits = yield* rateLimitsFromEnv
  const downloadTokenTtl = yield* Config.Int("LM_DOWNLOAD_TOKEN_TTL").pipe(Config.option)
  if (Option.isSome(downloadTokenTtl) && downloadTokenTtl.value < 1) {
    return yield* new InvalidSetting({ name: "LM_DOWNLOAD_TOKEN_TTL", message: "LM_DOWNLOAD_TOKEN_TTL: expected a whole number of seconds of at least 1" })
  }
  return {
    downloadTokenTtlSeconds: Option.getOrUndefined(downloadTokenTtl),
    webhooks,
    rateLimits,
    anomalyThresholds: yield* anomalyThresholdsFromEnv,
    masterKey,
    signingKey: Option.getOrUndefined(signingKey),
    offlineTtlSeconds: Option.getOrUndefined(offline),
    blacklist: blacklist.split(",").filter((e) => e.trim() !== ""),
    sweepIntervalSeconds: sweep,
    seatBatchWorkers: Option.getOrUndefined(seatBatchWorkers),
    eventRetentionDays,
    validationCache: { feedStaleMillis },
    paymentGraceDays: Option.getOrUndefined(paymentGraceDays),
    subscriptionJobIntervalSeconds: Option.getOrUndefined(subscriptionJob),
    anomalyIntervalSeconds: Option.getOrUndefined(anomalyInterval)
  } satisfies Engine.Options
})
