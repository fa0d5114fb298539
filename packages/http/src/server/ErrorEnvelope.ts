/**
 * The implementation of the {@link ErrorEnvelope} middleware. Around each endpoint it:
 * - answers 413 `rest_payload_too_large` before reading a body whose `Content-Length` is over the limit;
 * - reads an empty body (or none) on a POST/PUT/PATCH/DELETE as `{}`;
 * - turns HttpApi's bare 415 into 415 `rest_unsupported_media_type`;
 * - turns decode failures into 400 `rest_invalid_json` (the body is not JSON) or 400 `rest_invalid_param`
 *   with `data.params` naming each bad field;
 * - writes envelope errors and domain errors (anything with a string `code` and a numeric `status`) as the
 *   envelope, with their headers.
 * Defects pass through to the global middleware (`Routing.ts`), which answers 500.
 */
import { Context, Effect, Layer } from "effect"
import { Headers, HttpMethod, HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import { HttpApiError } from "effect/http-api"
import { ErrorEnvelope } from "../api/ErrorEnvelope.js"
import * as ApiErrors from "../domain/ApiErrors.js"
import * as InvalidParams from "../domain/InvalidParams.js"
import { envelope, errorResponse } from "./Responses.js"
import { payloadTooLarge } from "./Routing.js"
import { HttpSettings } from "./Settings.js"

/**
 * The request with an empty body read as `{}`. A request whose `Content-Length` is positive takes no detour;
 * one with no length (chunked, HTTP/2, a web `Request`) may or may not have a body, so its text is mapped once
 * read. An explicit `Content-Length: 0` is JSON whatever its content type says (`curl -X POST -d ''`).
 */
const withEmptyBodyAsObject = (request: HttpServerRequest, declaredEmpty: boolean): HttpServerRequest => {
  const text = Effect.map(request.text, (body) => body === "" ? "{}" : body)
  const headers = declaredEmpty ? Headers.set(request.headers, "content-type", "application/json") : request.headers
  return new Proxy(request, {
    get: (target, key) => key === "text" ? text : key === "headers" ? headers : Reflect.get(target, key, target)
  })
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

const slotName = { Params: "path", Query: "query", Headers: "headers", Payload: "body" } as const

/** The 400 for a request that failed decoding: not JSON at all, or JSON with bad fields. */
const invalidRequest = (
  error: HttpApiError.HttpApiSchemaError,
  request: HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const params = () => InvalidParams.fromSchemaError(error.cause, slotName[error.kind as keyof typeof slotName])
  const invalidParam = () => {
    const fields = params()
    return envelope(400, "rest_invalid_param", InvalidParams.message(fields), { params: fields })
  }
  if (error.kind !== "Payload") return Effect.sync(invalidParam)
  // The body was read (and kept) by the decoder; reading it again costs nothing.
  return Effect.match(request.text, {
    onFailure: invalidParam,
    onSuccess: (text) =>
      isJson(text)
        ? invalidParam()
        : envelope(400, "rest_invalid_json", "The request body is not valid JSON.")
  })
}

const unsupportedMediaType = () =>
  envelope(415, "rest_unsupported_media_type", "The request body must be JSON (Content-Type: application/json).")

/** What the middleware lets through: failures it does not recognise, which the router turns into a 500. */
type ErrorEnvelopeFailure = Parameters<ErrorEnvelope["Service"]>[0] extends Effect.Effect<any, infer E, any> ? E : never

/** The layer implementing {@link ErrorEnvelope}. */
export const ErrorEnvelopeLive: Layer.Layer<ErrorEnvelope, never, HttpSettings> = Layer.effect(
  ErrorEnvelope,
  Effect.gen(function*() {
    const { maxBodyBytes } = yield* HttpSettings
    return ErrorEnvelope.of((httpEffect, { endpoint }) =>
      Effect.withFiber((fiber) => {
        let request = Context.getUnsafe(fiber.context, HttpServerRequest)
        let effect = httpEffect
        if (endpoint.payload.size > 0 && HttpMethod.hasBody(request.method)) {
          const length = request.headers["content-length"]
          const declared = length === undefined ? undefined : Number(length)
          if (declared !== undefined && declared > maxBodyBytes) return Effect.sync(() => payloadTooLarge(maxBodyBytes))
          if (declared === undefined || declared === 0) {
            request = withEmptyBodyAsObject(request, declared === 0)
            effect = Effect.provideService(effect, HttpServerRequest, request)
          }
        }
        return effect.pipe(
          Effect.map((response) => response.status === 415 ? unsupportedMediaType() : response),
          Effect.catch((error: unknown) => {
            if (ApiErrors.isApiError(error)) return Effect.succeed(errorResponse(error))
            if (HttpApiError.HttpApiSchemaError.is(error) && error.kind in slotName) return invalidRequest(error, request)
            if (ApiErrors.isDomainErrorLike(error)) return Effect.succeed(errorResponse(ApiErrors.fromDomain(error)))
            return Effect.fail(error)
          })
        ) as Effect.Effect<HttpServerResponse.HttpServerResponse, ErrorEnvelopeFailure>
      })
    )
  })
)
