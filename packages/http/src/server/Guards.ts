/**
 * The `restRequestValid` guard chain (CONTRACT §2; the seed's `lm_rest_request_valid` filter). After a key's
 * scope is checked, each guard in turn gets the verdict so far and may change it:
 * `(allowed, request, scope) -> Effect<boolean>`. A final `false` is 403 `rest_forbidden`; a guard may also
 * fail with an envelope error or a domain error of its own (a rate limiter's 429). The public client routes, which need no key,
 * have their own chain: `ClientGuards` (`ClientPipeline.ts`). What the bundled server puts in each chain is
 * `BundledGuards.ts`.
 */
import { Context, Effect, Layer } from "effect"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import type { ApiErrors, ApiKeyScope, AuthenticatedKey } from "@lm/api"
import type { IpAllowList } from "./ClientIp.js"

/** What a guard sees of the request. */
export interface GuardedRequest {
  readonly http: HttpServerRequest
  /** The client address (socket, or `X-Forwarded-For` behind a trusted proxy); undefined on a unix socket. */
  readonly clientIp: string | undefined
  readonly apiKey: AuthenticatedKey
}

/** One guard: the verdict so far in, the new verdict out. */
export type RestRequestGuard = (
  allowed: boolean,
  request: GuardedRequest,
  scope: ApiKeyScope
) => Effect.Effect<boolean, ApiErrors.AnyError>

/** The guard chain, run in order. */
export class RestRequestValid extends Context.Service<RestRequestValid, {
  readonly guards: ReadonlyArray<RestRequestGuard>
}>()("lm/http/RestRequestValid") {
  /** A chain of exactly these guards. */
  static readonly layer = (guards: ReadonlyArray<RestRequestGuard>): Layer.Layer<RestRequestValid> =>
    Layer.succeed(RestRequestValid, { guards })
}

/** Vetoes requests from addresses outside the list (and requests with no address). */
export const ipAllowListGuard = (list: IpAllowList): RestRequestGuard => (allowed, request) =>
  Effect.succeed(allowed && request.clientIp !== undefined && list.allows(request.clientIp))

/** Runs the chain; `true` lets the request through. */
export const runGuards = (
  guards: ReadonlyArray<RestRequestGuard>,
  request: GuardedRequest,
  scope: ApiKeyScope
): Effect.Effect<boolean, ApiErrors.AnyError> => {
  let verdict: Effect.Effect<boolean, ApiErrors.AnyError> = Effect.succeed(true)
  for (const guard of guards) {
    verdict = Effect.flatMap(verdict, (allowed) => guard(allowed, request, scope))
  }
  return verdict
}
