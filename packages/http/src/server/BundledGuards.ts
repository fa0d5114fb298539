/**
 * What the bundled server puts in each guard chain: in the management routes' `restRequestValid` chain
 * (`Guards.ts`) the IP allow-list (`LM_ADMIN_ALLOWED_IPS`) and the rate limit per API key, then an embedder's
 * guards; in the public chain (`ClientGuards`, `ClientPipeline.ts`) the rate limits per client IP and per
 * (IP, license key), then the guards already provided. A limit that is off runs nothing per request.
 */
import { Effect, Layer, Option } from "effect"
import { RateLimiter } from "@lm/domain"
import { ClientGuards } from "./ClientPipeline.js"
import { ipAllowListGuard, type RestRequestGuard, RestRequestValid } from "./Guards.js"
import { rateLimitApiKeyGuard, rateLimitClientGuard } from "./RateLimits.js"
import { HttpSettings } from "./Settings.js"

/**
 * The bundled `restRequestValid` chain: the IP allow-list when `LM_ADMIN_ALLOWED_IPS` is set, the rate limit per
 * API key when the engine's `RateLimiter` has limits on, then `extra` guards.
 */
export const layerRestRequestValid = (
  extra: ReadonlyArray<RestRequestGuard> = []
): Layer.Layer<RestRequestValid, never, HttpSettings> =>
  Layer.effect(
    RestRequestValid,
    Effect.gen(function*() {
      const settings = yield* HttpSettings
      const limiter = yield* Effect.serviceOption(RateLimiter)
      return {
        guards: [
          ...(settings.adminAllowedIps === undefined ? [] : [ipAllowListGuard(settings.adminAllowedIps)]),
          ...(Option.isSome(limiter) && limiter.value.settings.enabled ? [rateLimitApiKeyGuard(limiter.value)] : []),
          ...extra
        ]
      }
    })
  )

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
