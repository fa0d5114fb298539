/**
 * The implementation of the {@link Authentication} middleware: HTTP Basic `ck_…`/`cs_…` credentials checked by
 * an {@link ApiKeyAuthenticator}, the scope checked against the method, then the `restRequestValid` guards.
 * The credential shape and the scope rule are the domain's (`@lm/domain` ApiKeys), used as they are.
 * Public routes do not carry the middleware and pay nothing for it.
 */
import { AuditLog, Errors, RateLimiter, Services } from "@lm/domain"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import { type ApiKeyScope, type AuthenticatedKey, Authentication, CurrentApiKey } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { auditedWriteOf, isWriteMethod, outcomeOf } from "./Audit.js"
import { clientIp } from "./ClientIp.js"
import { RestRequestValid, runGuards } from "./Guards.js"
import { currentRequestId } from "./Routing.js"
import { HttpSettings } from "./Settings.js"

/**
 * Checks a consumer key and secret. Resolves to the key (its id and scope) when both match, `undefined`
 * otherwise; a failure (e.g. the store is unreachable) is answered through the envelope.
 * The server backs it with the domain's API keys.
 */
export class ApiKeyAuthenticator extends Context.Service<ApiKeyAuthenticator, {
  readonly authenticate: (
    consumerKey: string,
    consumerSecret: string
  ) => Effect.Effect<AuthenticatedKey | undefined, ApiErrors.DomainErrorLike | ApiErrors.ApiError>
}>()("lm/http/ApiKeyAuthenticator") {}


// The refusals are the domain's errors (each carries its code and status), written as envelopes.
const unauthorized = () => ApiErrors.fromDomain(new Errors.Unauthorized({ message: "Valid API credentials are required." }))
const forbiddenScope = (scope: ApiKeyScope) =>
  ApiErrors.fromDomain(new Errors.Forbidden({ message: `This API key (scope ${scope}) may not make this request.` }))
const forbiddenGuard = () => ApiErrors.fromDomain(new Errors.Forbidden({ message: "This request is not allowed." }))

/**
 * The errors {@link Authentication} declares. An authenticator or guard may fail with any envelope error; the
 * envelope middleware writes whichever it is, so the narrower type only shapes the OpenAPI document.
 */
type Declared = ApiErrors.ForStatus<401 | 403 | 429 | 503>

const asDeclared = (error: ApiErrors.AnyError): Declared => ApiErrors.toApiError(error) as Declared

/**
 * Checks a request's credentials as {@link Authentication} does (the credential shape, the key, its scope for
 * the method, the guards) and answers its key; the routes outside the HttpApi (the streamed release upload) call
 * it with the `Authorization` header's Basic credentials. With rate limits on, failed logins are limited per
 * client IP (the domain's `RateLimiter`): credentials that match no key count one; once the IP's are spent, a
 * request with credentials is refused (429) before they are checked; a request without any is not a login.
 */
export const makeCheckCredentials = Effect.gen(function*() {
  const { authenticate, authorize } = yield* makeCredentialSteps
  return Effect.fnUntraced(function*(request: HttpServerRequest, consumerKey: string, consumerSecret: string) {
    const key = yield* authenticate(request, consumerKey, consumerSecret)
    yield* authorize(request, key)
    return key
  })
})

/**
 * {@link makeCheckCredentials} in its two steps: `authenticate` (the credentials name a key: else 401, or 429
 * after too many failed logins) and `authorize` (the key's scope allows the method and the guards pass: else 403).
 */
const makeCredentialSteps = Effect.gen(function*() {
  const authenticator = yield* ApiKeyAuthenticator
  const { guards } = yield* RestRequestValid
  const { trustProxyHops } = yield* HttpSettings
  const limiter = Option.getOrUndefined(Option.filter(yield* Effect.serviceOption(RateLimiter), (limiter) => limiter.settings.enabled))
  const authenticate = Effect.fnUntraced(function*(request: HttpServerRequest, consumerKey: string, consumerSecret: string) {
    const login = limiter !== undefined && (consumerKey !== "" || consumerSecret !== "")
      ? { limiter, ip: clientIp(request, trustProxyHops) }
      : undefined
    if (login !== undefined) yield* Effect.mapError(login.limiter.admitLogin(login.ip), asDeclared)
    const failed = () => login === undefined ? unauthorized() : Effect.andThen(login.limiter.loginFailed(login.ip), unauthorized())
    if (!Services.isCredentialShape(consumerKey, consumerSecret)) return yield* failed()
    const key = yield* Effect.mapError(authenticator.authenticate(consumerKey, consumerSecret), asDeclared)
    if (key === undefined) return yield* failed()
    return key
  })
  const authorize = Effect.fnUntraced(function*(request: HttpServerRequest, key: AuthenticatedKey) {
    if (!Services.scopeAllows(key.scope, request.method)) return yield* forbiddenScope(key.scope)
    if (guards.length > 0) {
      const guarded = { http: request, clientIp: clientIp(request, trustProxyHops), apiKey: key }
      if (!(yield* Effect.mapError(runGuards(guards, guarded, key.scope), asDeclared))) return yield* forbiddenGuard()
    }
  })
  return { authenticate, authorize, trustProxyHops }
})

/** The Basic credentials of an `Authorization` header, or undefined. */
export const basicCredentials = (header: string | undefined): { readonly user: string; readonly password: string } | undefined => {
  const match = header === undefined ? null : /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  if (match === null) return undefined
  const text = Buffer.from(match[1]!, "base64").toString("utf8")
  const colon = text.indexOf(":")
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) }
}

/**
 * The layer implementing {@link Authentication}. A write (any method but GET, HEAD, OPTIONS) by an authenticated
 * key is recorded in the audit log whatever its outcome, a refused scope or guard included (`Audit.ts`): with the
 * engine's `AuditLog` in context, which the bundled server always has. Failed logins (401, 429) name no actor and
 * are not recorded.
 */
export const AuthenticationLive: Layer.Layer<
  Authentication,
  never,
  ApiKeyAuthenticator | RestRequestValid | HttpSettings
> = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const { authenticate, authorize, trustProxyHops } = yield* makeCredentialSteps
    const auditLog = Option.getOrUndefined(yield* Effect.serviceOption(AuditLog))
    return Authentication.of({
      basic: Effect.fnUntraced(function*(httpEffect, { credential, endpoint, group }) {
        const request = yield* HttpServerRequest
        const consumerKey = credential.username
        const key = yield* authenticate(request, consumerKey, Redacted.value(credential.password))
        const handled = Effect.andThen(authorize(request, key), Effect.provideService(httpEffect, CurrentApiKey, key))
        if (auditLog === undefined || !isWriteMethod(request.method)) return yield* handled
        const write = auditedWriteOf({
          endpoint,
          group,
          url: request.url,
          key: { id: key.id, truncatedKey: Services.truncateConsumerKey(consumerKey) },
          ip: clientIp(request, trustProxyHops),
          requestId: yield* currentRequestId
        })
        return yield* auditLog.audited(write, handled, outcomeOf(write.target.type))
      })
    })
  })
)
