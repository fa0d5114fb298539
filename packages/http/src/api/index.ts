/**
 * `@lm/http/api` — the lm/v1 HttpApi definition and its schemas, without the server. Nothing it imports needs a
 * node: module (the domain comes in through `@lm/domain/core`), so client software in browsers, Deno and Bun
 * derives its typed client from this one definition (see `@lm/client`).
 */
export * as ApiErrors from "../domain/ApiErrors.js"
export { NoMeta, type Ok, Success } from "../domain/Envelope.js"
export * as Wire from "../domain/Wire.js"
export { Api, apiPath } from "./Api.js"
export {
  type ActivatedMachine,
  ClientGroup,
  type CrlResponse,
  type DeactivateResponse,
  type HeartbeatResponse,
  type PublicKeyResponse,
  type ValidateResponse
} from "./Client.js"
export { Authentication } from "./Authentication.js"
export { ErrorEnvelope } from "./ErrorEnvelope.js"
export { BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, Conflict, PayloadTooLarge, UnsupportedMediaType, RangeNotSatisfiable, RequestTimeout, UnprocessableEntity, TooManyRequests, InternalError, ServiceUnavailable } from "../domain/ApiErrors.js"
