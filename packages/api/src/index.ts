/**
 * `@lm/api` — the lm/v1 HttpApi definition and its wire schemas, without the server. Nothing it imports needs a
 * node: module (the domain comes in through `@lm/domain/core`), so client software in browsers, Deno and Bun
 * derives its typed client from this one definition (see `@lm/client`).
 */
export * as ApiErrors from "./wire/ApiErrors.js"
export type { ApiError } from "./wire/ApiErrors.js"
export { NoMeta, ok, type Ok, Success } from "./wire/Envelope.js"
export * as InvalidParams from "./wire/InvalidParams.js"
export * as Wire from "./wire/Wire.js"
export { Api, apiPath, openApiPath, parseOptions, strictPayloadOptions } from "./Api.js"
export { type ConnectionOptions, type LmApiClient, makeApiClient, restBase } from "./ApiClient.js"
export { version } from "./version.js"
export * from "./groups/Analytics.js"
export * from "./groups/ApiKeys.js"
export * from "./groups/AuditLog.js"
export * from "./groups/Billing.js"
export * from "./groups/Client.js"
export * from "./groups/Generators.js"
export * from "./groups/Licenses.js"
export * from "./groups/Machines.js"
export * from "./groups/Releases.js"
export * from "./groups/Subscriptions.js"
export * from "./groups/System.js"
export * from "./groups/Webhooks.js"
export * from "./middleware/Authentication.js"
export * from "./middleware/ErrorEnvelope.js"
export * from "./middleware/Idempotency.js"
export { BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, Conflict, PayloadTooLarge, UnsupportedMediaType, RangeNotSatisfiable, RequestTimeout, UnprocessableEntity, TooManyRequests, InternalError, ServiceUnavailable } from "./wire/ApiErrors.js"
