/**
 * @lm/http: the lm/v1 HTTP adapter on the engine. `handlers/` implements the groups of the API definition
 * (`@lm/api`), `server/` the middlewares, the guards and the two request transports (the Effect HTTP stack and
 * the fast path) on Node's HTTP server.
 */
export { AnalyticsHandlers } from "./handlers/Analytics.js"
export { ApiHandlers, type HandlersOf, mergeEntries } from "./handlers/ApiHandlers.js"
export { ApiKeysHandlers } from "./handlers/ApiKeys.js"
export { AuditLogHandlers } from "./handlers/AuditLog.js"
export { ClientHandlers } from "./handlers/Client.js"
export { GeneratorsHandlers } from "./handlers/Generators.js"
export { PoliciesHandlers } from "./handlers/Policies.js"
export { type DomainHandlers, group } from "./handlers/Group.js"
export { LicensesHandlers } from "./handlers/Licenses.js"
export { MachinesHandlers } from "./handlers/Machines.js"
export { ReleasesHandlers, UpdatesHandlers } from "./handlers/Releases.js"
export { SubscriptionsHandlers } from "./handlers/Subscriptions.js"
export { BillingHandlers, BillingProvidersHandlers } from "./handlers/Billing.js"
export { StorageHealth, SystemHandlers } from "./handlers/System.js"
export { WebhooksHandlers } from "./handlers/Webhooks.js"

export {
  ApiKeyAuthenticator,
  AuthenticationLive
} from "./server/Authentication.js"
export {
  clientIp,
  InvalidIpRange,
  type IpAllowList,
  makeIpAllowList,
  normalizeIp,
  parseIpAllowList
} from "./server/ClientIp.js"
export {
  type ClientEndpoint,
  type ClientGuard,
  type ClientGuardRequest,
  ClientGuards,
  type ClientRequestFacts,
  layerClientGuards
} from "./server/ClientPipeline.js"
export { layerApiRoutes, layerApiServer } from "./server/ApiServer.js"
export { layerClientRateLimit, layerRestRequestValid } from "./server/BundledGuards.js"
export { ErrorEnvelopeLive } from "./server/ErrorEnvelope.js"
export { FastPath, type FastPathService } from "./server/FastPath.js"
export { IdempotencyLive, replayedHeader } from "./server/Idempotency.js"
export { type GuardedRequest, ipAllowListGuard, type RestRequestGuard, RestRequestValid, runGuards } from "./server/Guards.js"
export { layerMiddlewares, layerRoutes, layerServer, openApiDocument, type RequestCounter, withServer } from "./server/Http.js"
export { rateLimitApiKeyGuard, rateLimitClientGuard } from "./server/RateLimits.js"
export { ReleaseRoutes } from "./server/ReleaseRoutes.js"
export { defaultRetryAfterSeconds, envelope, errorResponse, wwwAuthenticate } from "./server/Responses.js"
export {
  currentRequestId,
  makeRouteTable,
  mountAt,
  payloadTooLarge,
  requestEnvelope,
  type RequestEnvelopeOptions,
  requestIdOfContext,
  type RouteTable
} from "./server/Routing.js"
export { makeRequestMetrics } from "./server/RequestMetrics.js"
export {
  type AnsweredRequest,
  layerRequestObservers,
  makeRequestSteps,
  type RequestFrame,
  requestIdFor,
  RequestObserver,
  type RequestObserverMaker,
  type RequestSteps,
  type RouteOf,
  unmatchedRoute,
  type Transport
} from "./server/RequestSteps.js"
export {
  apiBase,
  checkTls,
  defaultMaxBodyBytes,
  HttpSettings,
  InvalidSetting,
  defaultMaxArtifactBytes,
  type Listen,
  normalizeRestRoot,
  type Settings
} from "./server/Settings.js"
