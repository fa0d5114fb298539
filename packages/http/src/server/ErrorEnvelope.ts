/**
 * The implementation of the {@link ErrorEnvelope} middleware. Around each endpoint it:
 * - answers 413 `rest_payload_too_large` before reading a body whose `Content-Length` is over the limit;
 * - reads an empty body (or none) on a POST/PUT/PATCH/DELETE as `{}`;
 * - answers 415 `rest_unsupported_media_type` before reading a body declared in another charset than UTF-8;
 * - turns HttpApi's bare 415 into 415 `rest_unsupported_media_type`;
 * - refuses a key repeated in an object of the body with 400 `rest_invalid_json` (CONTRACT §14);
 * - turns decode failures into 400 `rest_invalid_json` (the body is not JSON) or 400 `rest_invalid_param`
 *   with `data.params` naming each bad field;
 * - writes envelope errors and domain errors (anything with a string `code` and a numeric `status`) as the
 *   envelope, with their headers.
 * An endpoint annotated {@link StreamedBody} (the release upload) skips the body rules: its handler applies them.
 * One annotated {@link BulkBody} (the license import) is bound by `maxImportBodyBytes` instead of `maxBodyBytes`.
 * Defects pass through to the global middleware (`Routing.ts`), which answers 500.
 */
import { ByteSize, Context, Effect, Layer, Result } from "effect"
import type { Schema } from "effect"
import { Headers, HttpIncomingMessage, HttpMethod, HttpServerError, HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import { HttpApiError } from "effect/http-api"
import { ApiErrors, BulkBody, ErrorEnvelope, InvalidParams, StreamedBody } from "@lm/api"
import { duplicateKey } from "./JsonKeys.js"
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

/** A quick pre-filter: the text may hold an escaped NUL or surrogate (else it certainly holds neither). */
const mayHoldBadText = /\\u(?:0000|[dD][89a-fA-F])/

/** Whether a string has a NUL or an unpaired surrogate: text no store keeps as sent. */
const isBadString = (value: string): boolean => value.includes("\u0000") || loneSurrogate.test(value)
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The path of the first string (or object key) in a JSON value that no store can keep as sent. */
const badTextPath = (value: unknown, path: string): string | undefined => {
  if (typeof value === "string") return isBadString(value) ? path : undefined
  if (typeof value !== "object" || value === null) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = badTextPath(value[i], `${path}[${i}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`
    if (isBadString(key)) return at
    const found = badTextPath(item, at)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * The 400 for a body with a NUL character or an unpaired surrogate in any string: PostgreSQL cannot store the
 * first and would silently replace the second, so such text is refused at the door on every store alike.
 */
const badTextInBody = (text: string): HttpServerResponse.HttpServerResponse | undefined => {
  if (!mayHoldBadText.test(text)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined // not JSON: the decoder answers rest_invalid_json
  }
  const path = badTextPath(parsed, "")
  if (path === undefined) return undefined
  const field = path === "" ? "body" : path
  return envelope(400, "rest_invalid_param", `Invalid parameter: ${field}.`, {
    params: { [field]: "must not contain NUL characters or unpaired surrogates" }
  })
}

/** How deeply a body's arrays and objects may nest; no contract field needs more, and deeper input overflows recursion. */
export const MAX_BODY_DEPTH = 64

/** Whether JSON text nests arrays/objects deeper than `max` (strings and escapes are skipped). */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}

const tooDeep = () =>
  envelope(400, "rest_invalid_param", "Invalid parameter: body.", {
    params: { body: `must not nest arrays or objects more than ${MAX_BODY_DEPTH} levels deep` }
  })

/** The 400 `rest_invalid_json` for a body whose object repeats a key (CONTRACT §14), naming the key. */
const duplicatedKey = (text: string): HttpServerResponse.HttpServerResponse | undefined => {
  const key = duplicateKey(text)
  return key === undefined
    ? undefined
    : envelope(400, "rest_invalid_json", `The request body repeats the key ${JSON.stringify(key)} in one object; each key may appear once.`)
}

/**
 * The 400 for a body text refused before it is decoded (nested too deeply, a key repeated in an object, a NUL
 * or an unpaired surrogate in a string), or `undefined` when the decoder may have it. The fast path
 * (`FastPath.ts`) calls it too.
 */
export const refuseBodyText = (text: string): HttpServerResponse.HttpServerResponse | undefined =>
  nestsDeeperThan(text, MAX_BODY_DEPTH) ? tooDeep() : duplicatedKey(text) ?? badTextInBody(text)

/** The same refusal for a NUL in the path or query (`%00`). */
const badTextInUrl = (url: string): HttpServerResponse.HttpServerResponse | undefined =>
  /%00/.test(url)
    ? envelope(400, "rest_invalid_param", "Invalid parameter: query.", { params: { query: "must not contain NUL characters" } })
    : undefined

const slotName = { Params: "path", Query: "query", Headers: "headers", Payload: "body" } as const

/** The 400 for a request that failed decoding: not JSON at all, or JSON with bad fields. */
const invalidRequest = (
  error: HttpApiError.HttpApiSchemaError,
  request: HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const invalidParam = () => invalidParams(error.cause, slotName[error.kind as keyof typeof slotName])
  if (error.kind !== "Payload") return Effect.sync(invalidParam)
  // The body was read (and kept) by the decoder; reading it again costs nothing.
  return Effect.match(request.text, {
    onFailure: invalidParam,
    onSuccess: (text) => isJson(text) ? invalidParam() : invalidJson()
  })
}

/** The 400 `rest_invalid_param` for a schema failure of a request part (`whole` names the part: `body`, ...). */
export const invalidParams = (cause: Schema.SchemaError, whole: string): HttpServerResponse.HttpServerResponse => {
  const fields = InvalidParams.fromSchemaError(cause, whole)
  return envelope(400, "rest_invalid_param", InvalidParams.message(fields), { params: fields })
}

/** The 400 `rest_invalid_json` for a body that is not JSON. */
export const invalidJson = (): HttpServerResponse.HttpServerResponse =>
  envelope(400, "rest_invalid_json", "The request body is not valid JSON.")

/**
 * The charset a `Content-Type` declares when it is not UTF-8 (CONTRACT §1, §14: bodies are UTF-8), or undefined
 * when it declares none or UTF-8 under any of its names (`utf-8`, `UTF-8`, `"utf-8"`, `utf8`: the WHATWG labels,
 * as `TextDecoder` knows them).
 */
export const foreignCharset = (contentType: string | undefined): string | undefined => {
  if (contentType === undefined || !contentType.includes(";")) return undefined
  for (const parameter of contentType.split(";").slice(1)) {
    const equals = parameter.indexOf("=")
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== "charset") continue
    let value = parameter.slice(equals + 1).trim()
    if (value.length >= 2 && value.startsWith("\"") && value.endsWith("\"")) value = value.slice(1, -1)
    if (!isUtf8Label(value)) return value
  }
  return undefined
}

const isUtf8Label = (label: string): boolean => {
  try {
    return new TextDecoder(label).encoding === "utf-8"
  } catch {
    return false // not a known encoding at all
  }
}

/** The 415 for a body in another charset than UTF-8. */
export const unsupportedCharset = (charset: string): HttpServerResponse.HttpServerResponse =>
  envelope(
    415,
    "rest_unsupported_media_type",
    `The request body must be UTF-8 JSON (Content-Type: application/json; charset=utf-8); charset ${JSON.stringify(charset)} is not supported.`
  )

const unsupportedMediaType = () =>
  envelope(415, "rest_unsupported_media_type", "The request body must be JSON (Content-Type: application/json).")

/**
 * An endpoint's effect with every failure the envelope knows written as its answer (envelope errors, domain errors,
 * decode failures); other failures pass through, for the router to answer 500. The idempotency middleware
 * (`Idempotency.ts`), inside this one, uses it to have the answer it keeps.
 */
export const answerOf = <E, R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  request: HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R> =>
  effect.pipe(
    Effect.map((response) => response.status === 415 ? unsupportedMediaType() : response),
    Effect.catch((error: unknown) => {
      if (ApiErrors.isApiError(error)) return Effect.succeed(errorResponse(error))
      if (HttpApiError.HttpApiSchemaError.is(error) && error.kind in slotName) return invalidRequest(error, request)
      if (ApiErrors.isDomainErrorLike(error)) return Effect.succeed(errorResponse(error))
      return Effect.fail(error)
    })
  )

/**
 * The status {@link answerOf} answers a failure with: an envelope or domain error's own, 400 for a request part
 * that failed decoding, else 500 (the router's answer to what the envelope does not know). The audit log records
 * a refused write with it (`Audit.ts`), so the recorded status is the status sent.
 */
export const refusalStatusOf = (error: unknown): number => {
  if (ApiErrors.isApiError(error) || ApiErrors.isDomainErrorLike(error)) return ApiErrors.toApiError(error).data.status
  if (HttpApiError.HttpApiSchemaError.is(error) && error.kind in slotName) return 400
  return 500
}

/** What the middleware lets through: failures it does not recognise, which the router turns into a 500. */
type ErrorEnvelopeFailure = Parameters<ErrorEnvelope["Service"]>[0] extends Effect.Effect<any, infer E, any> ? E : never

/** A body read that stopped at the body limit. */
const isBodyTooLarge = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"

/** The layer implementing {@link ErrorEnvelope}. */
export const ErrorEnvelopeLive: Layer.Layer<ErrorEnvelope, never, HttpSettings> = Layer.effect(
  ErrorEnvelope,
  Effect.gen(function*() {
    const settings = yield* HttpSettings
    const importBodySize = ByteSize.bytes(settings.maxImportBodyBytes)
    return ErrorEnvelope.of((httpEffect, { endpoint }) =>
      Effect.withFiber((fiber) => {
        let request = Context.getUnsafe(fiber.context, HttpServerRequest)
        let effect = httpEffect
        const bulk = Context.get(endpoint.annotations, BulkBody)
        const maxBodyBytes = bulk ? settings.maxImportBodyBytes : settings.maxBodyBytes
        const jsonBody = endpoint.payload.size > 0 && HttpMethod.hasBody(request.method) &&
          !Context.get(endpoint.annotations, StreamedBody)
        if (jsonBody) {
          const charset = foreignCharset(request.headers["content-type"])
          if (charset !== undefined) return Effect.sync(() => unsupportedCharset(charset))
          const length = request.headers["content-length"]
          const declared = length === undefined ? undefined : Number(length)
          if (declared !== undefined && declared > maxBodyBytes) return Effect.sync(() => payloadTooLarge(maxBodyBytes))
          if (declared === undefined || declared === 0) {
            request = withEmptyBodyAsObject(request, declared === 0)
            effect = Effect.provideService(effect, HttpServerRequest, request)
          }
        }
        const badUrl = badTextInUrl(request.url)
        if (badUrl !== undefined) return Effect.succeed(badUrl)
        if (jsonBody) {
          // The decoder reads the same body text again from the request, at no cost.
          const decode = effect
          effect = Effect.flatMap(
            Effect.result(request.text),
            (read) => {
              // Also a body without a Content-Length (chunked) is cut off at the limit: the 413 names this route's.
              if (Result.isFailure(read) && isBodyTooLarge(read.failure)) return Effect.sync(() => payloadTooLarge(maxBodyBytes))
              const refused = refuseBodyText(Result.isSuccess(read) ? read.success : "")
              return refused === undefined ? decode : Effect.succeed(refused)
            }
          )
        }
        // The body is read (and kept) up to the route's limit, by this middleware and those inside it alike.
        if (bulk) effect = Effect.provideService(effect, HttpIncomingMessage.MaxBodySize, importBodySize)
        return answerOf(effect, request) as Effect.Effect<HttpServerResponse.HttpServerResponse, ErrorEnvelopeFailure>
      })
    )
  })
)
