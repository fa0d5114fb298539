/**
 * @lm/http: the lm/v1 HTTP adapter. `api/` holds the HttpApi definition (shared with clients), `domain/` the
 * wire schemas and errors, `server/` the middlewares, handlers and the Node server.
 */
export * as ApiErrors from "./domain/ApiErrors.js"
export { NoMeta, ok, type Ok, Success } from "./domain/Envelope.js"
export * as InvalidParams from "./domain/InvalidParams.js"

export { Api, apiPath, parseOptions, strictPayloadOptions } from "./api/Api.js"
export { ApiKeyScope, type AuthenticatedKey, Authentication, CurrentApiKey } from "./api/Authentication.js"
export { ErrorEnvelope } from "./api/ErrorEnvelope.js"
export { Health, SystemGroup } from "./api/System.js"

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
export { ErrorEnvelopeLive } from "./server/ErrorEnvelope.js"
export { type GuardedRequest, ipAllowListGuard, type RestRequestGuard, RestRequestValid, runGuards } from "./server/Guards.js"
export { layerMiddlewares, layerRoutes, layerServer, openApiDocument } from "./server/Http.js"
export { runServer } from "./server/Main.js"
export { defaultRetryAfterSeconds, envelope, errorResponse, wwwAuthenticate } from "./server/Responses.js"
export {
  currentRequestId,
  makeRouteTable,
  mountAt,
  payloadTooLarge,
  requestEnvelope,
  type RequestEnvelopeOptions,
  requestIdFor,
  type RouteTable
} from "./server/Routing.js"
export {
  apiBase,
  defaultMaxBodyBytes,
  HttpSettings,
  InvalidSetting,
  type Listen,
  listenFromEnv,
  normalizeRestRoot,
  parseTrustProxy,
  type Settings
} from "./server/Settings.js"
export { StorageHealth, SystemHandlers } from "./server/System.js"
export { version } from "./version.js"
