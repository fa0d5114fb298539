/**
 * Rate limits in the HTTP adapter (CONTRACT §2, §11): the domain's `RateLimiter` as one guard of each chain, so
 * that every way a request arrives passes it: the public guards (`ClientGuards`: validate, activate,
 * deactivate, heartbeat, crl, public-key, on the fast path and through the handlers alike), and the management
 * routes' `restRequestValid` chain, per API key (failed logins are limited where credentials are checked,
 * `Authentication.ts`). Over a limit: 429 `rest_rate_limited` with `Retry-After` and `data.retry_after`
 * (`Responses.ts`). The limits themselves are the engine's settings (`LM_RATE_LIMIT*`, read by the bundled
 * server); `BundledGuards.ts` puts these guards in the chains.
 */
import { Effect } from "effect"
import type { RateLimiter } from "@lm/domain"
import type { ClientGuard, ClientGuardRequest } from "./ClientPipeline.js"
import type { RestRequestGuard } from "./Guards.js"

/** The public guard: per client IP, and per (IP, license key) when the request names one. */
export const rateLimitClientGuard = (limiter: RateLimiter["Service"]): ClientGuard =>
  Object.assign(
    (request: ClientGuardRequest) => limiter.admitPublic(publicRequest(request)),
    { now: (request: ClientGuardRequest) => limiter.admitPublicNow(publicRequest(request)) }
  )

const publicRequest = (request: ClientGuardRequest) => ({ endpoint: request.endpoint, ip: request.clientIp, licenseKey: request.licenseKey })

/** The management guard: per API key, after the scope check (a request already vetoed takes nothing). */
export const rateLimitApiKeyGuard = (limiter: RateLimiter["Service"]): RestRequestGuard => (allowed, request) =>
  allowed
    ? Effect.as(limiter.admitApiKey(String(request.apiKey.id)), true)
    : Effect.succeed(false)
