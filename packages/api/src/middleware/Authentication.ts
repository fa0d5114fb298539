/**
 * API-key authentication for management routes (CONTRACT §2): HTTP Basic with the consumer key as user and the
 * consumer secret as password, a scope check by method, then the `restRequestValid` guard chain.
 */
import { Context } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Forbidden, ServiceUnavailable, TooManyRequests, Unauthorized } from "../wire/ApiErrors.js"

/** The domain's API key scopes, re-exported for the adapter's users. */
export const ApiKeyScope = Model.ApiKeyScope
export type ApiKeyScope = Model.ApiKeyScope

/** The API key a request was authenticated with. */
export interface AuthenticatedKey {
  readonly id: number
  readonly scope: Model.ApiKeyScope
}

/** The API key of the current request, provided to management handlers by {@link Authentication}. */
export class CurrentApiKey extends Context.Service<CurrentApiKey, AuthenticatedKey>()("lm/http/CurrentApiKey") {}

/** The authentication middleware (implementation: `server/Authentication.ts`); add it to management groups. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentApiKey }>()(
  "lm/http/Authentication",
  {
    security: { basic: HttpApiSecurity.basic },
    error: [Unauthorized, Forbidden, TooManyRequests, ServiceUnavailable]
  }
) {}
