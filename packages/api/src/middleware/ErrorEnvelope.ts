/**
 * The middleware every endpoint of the API carries (added last, so it wraps all others): it turns every
 * failure an endpoint or another middleware raises into the contract's error envelope. The errors it
 * declares are the ones any endpoint can answer with, so the OpenAPI document lists them everywhere.
 */
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, InternalError, PayloadTooLarge, ServiceUnavailable, UnsupportedMediaType } from "../wire/ApiErrors.js"

/** The error-envelope middleware (implementation: `server/ErrorEnvelope.ts`). */
export class ErrorEnvelope extends HttpApiMiddleware.Service<ErrorEnvelope>()("lm/http/ErrorEnvelope", {
  error: [BadRequest, PayloadTooLarge, UnsupportedMediaType, InternalError, ServiceUnavailable]
}) {}

/**
 * Marks an endpoint whose handler reads its own body as it streams (the release upload): the middleware's JSON
 * body rules (1 MiB cap read up front, UTF-8 only, duplicate keys) are left to that handler.
 */
export const StreamedBody = Context.Reference<boolean>("lm/http/StreamedBody", { defaultValue: () => false })

/**
 * Marks an endpoint whose JSON body may be a bulk one (the license import, CONTRACT §17): it is bound by the
 * server's import body limit (`LM_IMPORT_MAX_BODY_BYTES`) instead of the 1 MiB every other body has.
 */
export const BulkBody = Context.Reference<boolean>("lm/http/BulkBody", { defaultValue: () => false })
