/**
 * What happens around the router, for every request: the API is mounted at `LM_REST_ROOT`; every response
 * carries `X-Request-Id`; an unknown path is 404 `rest_no_route`, a known path with another method 405
 * `rest_method_not_allowed` with `Allow` (routing comes before auth); an oversized body is 413; and any
 * defect is 500 `internal_error` whose `data.request_id` finds the logged cause.
 */
import { Cause, Context, Effect, Layer, Option } from "effect"
import type { Types } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import type { RequestSteps } from "./RequestSteps.js"
import { envelope } from "./Responses.js"

/** The methods a route can be registered for, in the order `Allow` lists them. */
const methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

/**
 * The (method, path) pairs the server answers, kept beside the router so that a request the router does not
 * match can be told apart: no such path (404) or not with this method (405).
 */
export interface RouteTable {
  readonly add: (method: string, path: HttpRouter.PathInput) => void
  /** The methods a path answers, for `Allow`; empty when the path is unknown. */
  readonly allowedMethods: (url: string) => ReadonlyArray<string>
  /** The template of the route answering `method` on `path` (`/api/lm/v1/licenses/:id`), for metrics; undefined when none. */
  readonly routeOf: (method: string, path: string) => string | undefined
}

/** An empty route table. */
export const makeRouteTable = (): RouteTable => {
  const router = FindMyWay.make<string>()
  const added = new Set<string>()
  return {
    add: (method, path) => {
      const list = method === "*" ? methods : method === "GET" ? ["GET", "HEAD"] : [method]
      for (const m of list) {
        const key = `${m} ${path}`
        if (added.has(key)) continue
        added.add(key)
        router.on(m, path, path)
      }
    },
    allowedMethods: (url) => methods.filter((method) => router.find(method, url) !== undefined),
    routeOf: (method, path) => router.find(method, path)?.handler
  }
}

/**
 * Mounts every route added by the layers it is provided to under `restRoot`, recording each in `table`.
 * Paths are rewritten when the route is added, so a request pays nothing for the mount.
 */
export const mountAt = (restRoot: string, table: RouteTable): Layer.Layer<HttpRouter.HttpRouter, never, HttpRouter.HttpRouter> =>
  Layer.effect(
    HttpRouter.HttpRouter,
    Effect.map(Effect.service(HttpRouter.HttpRouter), (router) => {
      const mount = (route: HttpRouter.Route<any, any>): HttpRouter.Route<any, any> => {
        const path = (restRoot === "" ? route.path : HttpRouter.prefixPath(route.path, restRoot)) as HttpRouter.PathInput
        table.add(route.method, path)
        return HttpRouter.route(route.method, path, route.handler, { uninterruptible: route.uninterruptible })
      }
      const addAll = ((routes: ReadonlyArray<HttpRouter.Route<any, any>>) =>
        router.addAll(routes.map(mount))) as HttpRouter.HttpRouter["addAll"]
      return HttpRouter.HttpRouter.of({
        ...router,
        addAll,
        add: ((method, path, handler, options) =>
          addAll([HttpRouter.route(method, path, handler, options)])) as HttpRouter.HttpRouter["add"]
      })
    })
  )

/** Request ids by the underlying request (shared by every view of it), so a lookup costs nothing per request. */
const requestIds = new WeakMap<object, string>()

/** The request id of the current request, as sent back in `X-Request-Id` (e.g. to put in a log line). */
export const currentRequestId: Effect.Effect<string, never, HttpServerRequest> = Effect.map(
  Effect.service(HttpServerRequest),
  (request) => requestIds.get(request.source) ?? ""
)

/**
 * The request id of the request a fiber serves on the Effect stack, from its context, or undefined (not a
 * request's fiber): what a logger adds to each line, at no cost to requests that log nothing.
 */
export const requestIdOfContext = (context: Context.Context<never>): string | undefined => {
  const request = Context.getOrUndefined(context, HttpServerRequest)
  return request === undefined ? undefined : requestIds.get(request.source)
}

/** The `HttpServerError` a cause failed or died with, if any (no route, an unreadable or oversized body). */
const serverError = (cause: Cause.Cause<unknown>): HttpServerError.HttpServerError | undefined => {
  for (const reason of cause.reasons) {
    const error = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (HttpServerError.isHttpServerError(error)) return error
  }
  return undefined
}

const internalErrorMessage = "An internal error occurred. Quote the request id when reporting it."

/** What the global middleware needs to know. */
export interface RequestEnvelopeOptions {
  /** The routes served, to tell 404 from 405. */
  readonly table: RouteTable
  /** The body limit, for the 413 message. */
  readonly maxBodyBytes: number
  /**
   * The request id, the headers of every answer (`X-Request-Id`, CORS) and the observer's report, as the fast path
   * runs them too (`RequestSteps.ts`); preflights are answered with its CORS policy.
   */
  readonly steps: RequestSteps
}

/** The 413 for a body over the limit. */
export const payloadTooLarge = (maxBodyBytes: number): HttpServerResponse.HttpServerResponse =>
  envelope(413, "rest_payload_too_large", `The request body is larger than the limit of ${maxBodyBytes} bytes.`)

/** The response for a request whose handling failed. */
const failureResponse = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest,
  requestId: string,
  options: RequestEnvelopeOptions
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  // An interrupted request (the client went away) holds no error to answer.
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const reason = serverError(cause)?.reason
  if (reason?._tag === "RouteNotFound") {
    const allowed = options.table.allowedMethods(request.url)
    if (allowed.length === 0) {
      return Effect.succeed(noRoute())
    }
    return Effect.succeed(envelope(
      405,
      "rest_method_not_allowed",
      `Method ${request.method} is not allowed here; allowed: ${allowed.join(", ")}.`,
      undefined,
      { allow: allowed.join(", ") }
    ))
  }
  if (reason?._tag === "RequestParseError") {
    if (reason.reason === "BodyTooLarge") return Effect.succeed(payloadTooLarge(options.maxBodyBytes))
    return Effect.succeed(envelope(400, "rest_invalid_json", "The request body could not be read."))
  }
  return internalError(cause, requestId, request.method, request.url)
}

/**
 * The 500 `internal_error` for a defect, after logging its cause with the request id, method and URL (the
 * fast path, `FastPath.ts`, answers its defects with it too).
 */
export const internalError = (
  cause: Cause.Cause<unknown>,
  requestId: string,
  method: string,
  url: string
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.as(
    // The path only: a query may carry a license key or a download token.
    Effect.logError("Request failed", cause).pipe(Effect.annotateLogs({ request_id: requestId, method, url: url.split("?")[0] })),
    envelope(500, "internal_error", internalErrorMessage, { request_id: requestId })
  )

/**
 * The global middleware: request id, `X-Request-Id` on every response, CORS (preflights answered before
 * routing, the headers on every response, errors included), and envelopes for the failures no route handles
 * (unknown route, wrong method, oversized body, defects).
 */
export const requestEnvelope = (options: RequestEnvelopeOptions) =>
  HttpRouter.middleware<{ handles: unknown }>()(
    (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest)
        const frame = options.steps.begin(
          "effect",
          request.method,
          request.url,
          request.headers["x-request-id"],
          request.headers.origin,
          Option.getOrUndefined(request.remoteAddress),
          request.headers["x-forwarded-for"]
        )
        const requestId = frame.requestId
        requestIds.set(request.source, requestId)
        const preflight = options.steps.cors.preflight(request.method, request.url, request.headers, options.table.allowedMethods)
        // No log annotation or service per request: they would cost more than the rest of this middleware (loggers
        // find the request id with `requestIdOfContext`).
        const handled = preflight === undefined
          ? Effect.catchCause(httpEffect, (cause) => failureResponse(cause, request, requestId, options))
          : Effect.succeed(preflight)
        return Effect.map(handled, (response) => {
          frame.answered(response.status)
          return HttpServerResponse.setHeaders(response, frame.headers)
        }) as Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>
      }),
    { global: true }
  )

/** 404 `rest_no_route`: no route matches (also a route that is off, such as a billing provider without its secret). */
export const noRoute = () => envelope(404, "rest_no_route", "No route was found matching the URL and request method.")
