/**
 * Rate limits in the HTTP adapter (CONTRACT §2, §11): the domain's `RateLimiter` as one guard of each chain, so
 * that every way a request arrives passes it: the public guards (`ClientGuards`: validate, activate,
 * deactivate, heartbeat, crl, public-key, on the fast path and through the handlers alike), and the management
 * routes' `restRequestValid` chain, per API key (failed logins are limited where credentials are checked,
 * `Authentication.ts`). Over a limit: 429 `rest_rate_limited` with `Retry-After` and
 * `data.retry_after` (`Responses.ts`). Also the settings, read from the environment.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { type Engine, RateLimit, RateLimiter } from "@lm/domain"
import * as ApiErrors from "../domain/ApiErrors.js"
import { type ClientGuard, ClientGuards } from "./ClientPipeline.js"
import type { RestRequestGuard } from "./Guards.js"
import { type InvalidSetting, parseSwitch, positiveInt, readSetting } from "./Settings.js"

/** The public guard: per client IP, and per (IP, license key) when the request names one. */
export const rateLimitClientGuard = (limiter: RateLimiter["Service"]): ClientGuard => (request) =>
  Effect.mapError(
    limiter.admitPublic({ endpoint: request.endpoint, ip: request.clientIp, licenseKey: request.licenseKey }),
    ApiErrors.fromDomain
  )

/** The management guard: per API key, after the scope check (a request already vetoed takes nothing). */
export const rateLimitApiKeyGuard = (limiter: RateLimiter["Service"]): RestRequestGuard => (allowed, request) =>
  allowed
    ? Effect.as(Effect.mapError(limiter.admitApiKey(String(request.apiKey.id)), ApiErrors.fromDomain), true)
    : Effect.succeed(false)

/**
 * `ClientGuards`: the rate limiter when limits are on (nothing runs per request for it when off), then the guards
 * already provided (an embedder's).
 */
export const layerClientRateLimit: Layer.Layer<never, never, RateLimiter> = Layer.effect(
  ClientGuards,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const { guards } = yield* ClientGuards
    return { guards: [...(limiter.settings.enabled ? [rateLimitClientGuard(limiter)] : []), ...guards] }
  })
)

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
