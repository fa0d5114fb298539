/** The access feature in the engine: API keys, rate limits and the blacklist. */
import { Layer } from "effect"
import { servicesOnly } from "../shared/feature.js"
import { ApiKeys } from "./ApiKeys.js"
import { Blacklist, blacklistFromEntries } from "./Blacklist.js"
import { defaultRateLimitSettings, type RateLimitSettings } from "./rateLimit.js"
import { RateLimiter, type RateLimiterOptions } from "./RateLimiter.js"

/** Settings of the access feature. */
export interface AccessOptions {
  /** Refused outright with `blacklisted`: entries `key:…`, `fp:…`, `ip:…`. */
  readonly blacklist?: ReadonlyArray<string> | undefined
  /**
   * Rate limits (see `RateLimiter`): off unless given (the bundled server reads `LM_RATE_LIMIT*`). Shared between
   * processes when the store (or a layer over it) provides `Ports.SharedRateLimits`.
   */
  readonly rateLimits?: RateLimitOptions | undefined
}

/** The rate limits and how often shared buckets are reconciled. */
export interface RateLimitOptions extends RateLimiterOptions {
  readonly settings: RateLimitSettings
}

/** `ApiKeys`, the `RateLimiter` (off unless `rateLimits` is given) and the `Blacklist`. */
export const feature = (options: AccessOptions) =>
  servicesOnly(
    Layer.mergeAll(
      ApiKeys.layer,
      RateLimiter.layer(options.rateLimits?.settings ?? { ...defaultRateLimitSettings, enabled: false }, options.rateLimits ?? {}),
      Layer.succeed(Blacklist, blacklistFromEntries(options.blacklist ?? []))
    )
  )
