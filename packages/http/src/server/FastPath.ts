/**
 * The fast path of the hot client writes: `POST {api_base}/validate`, `/activate`, `/deactivate` and
 * `/heartbeat` answered straight from Node's `request` event (the server offers each request here first, see
 * `Http.ts`), in front of the Effect HTTP stack (request wrapping, router, global and HttpApi middlewares),
 * which costs more per request than the whole answer.
 *
 * It answers exactly what the Effect path answers, because it runs the same pieces:
 * - the payload is decoded by the endpoint's own payload schema, read from the `Api` definition with
 *   `HttpApi.reflect`, with the same parse options (compiled once);
 * - then the client pipeline (`ClientPipeline.ts`), as the HttpApi handlers run it: public guards, the domain
 *   call, the answer, refusals written as the envelope;
 * - bad bodies are refused by the same functions as the `ErrorEnvelope` middleware (`refuseBodyText`,
 *   `invalidJson`, `invalidParams`), defects by the same `internalError` as the global middleware (500 with
 *   the request id, cause logged);
 * - the request id, the headers of every answer (`X-Request-Id`, CORS) and the observer's report by the same
 *   steps (`RequestSteps.ts`), the request's facts (client IP by `LM_TRUST_PROXY`) by the pipeline's
 *   `factsOfNodeRequest`, the response written to Node the way `NodeHttpServer` writes it (status, headers in
 *   the same order, the JSON text).
 *
 * It only takes a request it can answer identically, and decides before reading a byte of the body: method
 * POST over HTTP/1.x, the exact path (no query string), a JSON content type (UTF-8, or no charset), a
 * `Content-Length` from 1 to the body limit, no `Transfer-Encoding`, no `Expect`. Anything else (other methods, HEAD/OPTIONS, chunked or
 * empty or oversized bodies, other content types, HTTP/2) goes to the Effect stack untouched. The test
 * `packages/http/test/fast-path.test.ts` runs the same requests through both paths and compares the answers.
 *
 * A validation whose every piece can answer at once (the guards' `now`, the validation cache holding what it
 * reads, a synchronous signer, no tracer: `ClientPipeline.validateNow`) is answered on the `request` event's
 * stack, without a fiber: the effect runtime's steps were the largest part of a validate's CPU (bench/README.md,
 * "Where the time of a validate goes"). Anything else, and whatever that lane cannot finish, runs in a fiber.
 * Each request runs in a fiber forked with the engine's context, captured once. A client that goes away
 * interrupts its fiber; closing the layer (after the server has stopped and finished its connections, see
 * `layerServer`) interrupts whatever is still running, before the engine (event log, store) closes.
 * `LM_HTTP_FAST_PATH=0` turns it off (`HttpSettings.fastPath`).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Result, Schema, Tracer } from "effect"
import { type Headers, HttpTraceContext, type HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import { Api, commonValidatePayload, ErrorEnvelope } from "@lm/api"
import {
  type ClientEndpoint,
  type ClientInput,
  type ClientPipeline,
  type ClientRequestFacts,
  factsOfNodeRequest,
  makeClientPipeline,
  makeClientPipelineOf
} from "./ClientPipeline.js"
import { makeWplmAnswers, wplmRoutes } from "../handlers/WplmAnswers.js"
import { foreignCharset, invalidJson, invalidParams, refuseBodyText } from "./ErrorEnvelope.js"
import { makeRequestSteps, type RequestFrame } from "./RequestSteps.js"
import { internalError } from "./Routing.js"
import { HttpSettings } from "./Settings.js"

/** The client endpoints the fast path answers. */
export const fastPathEndpoints = ["validate", "activate", "deactivate", "heartbeat"] as const satisfies ReadonlyArray<ClientEndpoint>
export type FastPathEndpoint = (typeof fastPathEndpoints)[number]

/** The fast path, as the server uses it. */
export interface FastPathService {
  /**
   * Takes the request when it is one of the fast path's own and returns `true` (the answer follows); returns
   * `false`, having touched nothing, for any other request.
   */
  readonly handle: (request: IncomingMessage, response: ServerResponse) => boolean
  /** Requests taken so far, by endpoint (for tests and benchmarks; never on the wire). */
  readonly served: () => Readonly<Record<FastPathEndpoint, number>>
  /** Requests whose answer is still being worked out (fibers running). */
  readonly inFlight: () => number
  /** Validations the pipeline answered at once, without a fiber (for tests and benchmarks). */
  readonly answeredAtOnce: () => number
}

/** The fast path of the hot client writes (see the module comment). */
export class FastPath extends Context.Service<FastPath, FastPathService>()("lm/http/FastPath") {
  /** The fast path on the engine's services and `ClientGuards`, for `HttpSettings`' rest root and body limit. */
  static readonly layer = Layer.effect(FastPath, Effect.suspend(() => make))
}

/** One route of the fast path: its endpoint, its payload decoder. */
export interface Route {
  readonly name: FastPathEndpoint
  readonly decode: (input: unknown) => Result.Result<unknown, Schema.SchemaError>
}

/** The media type of a `Content-Type` header as HttpApi compares it: lower case, no parameters. */
const mediaType = (contentType: string): string => {
  const normalized = contentType.toLowerCase().trim()
  const index = normalized.indexOf(";")
  return index === -1 ? normalized : normalized.slice(0, index).trim()
}

/** A request header as Node's parser gives it (a string for every header the fast path reads). */
const header = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : undefined
}

/** Decodes request bodies as `NodeHttpServer` does (UTF-8, a leading BOM dropped, bad bytes replaced). */
const textDecoder = new TextDecoder()

/**
 * The fast path's routes by path (without the rest root), read from the `Api` definition with
 * `HttpApi.reflect`: each endpoint's payload decoder as `HttpApiBuilder` builds it, the union of its JSON
 * payload schemas with the parse options the API, group and endpoint annotate. Refuses an endpoint the fast
 * path could not answer like the Effect stack (another method, no JSON payload, a middleware other than the
 * error envelope), so that a change to the definition cannot silently bypass it.
 */
export const routesOf = (): ReadonlyMap<string, Route> => {
  const routes = new Map<string, Route>()
  HttpApi.reflect(Api, {
    predicate: ({ endpoint, group }) =>
      group.identifier === "client" && (fastPathEndpoints as ReadonlyArray<string>).includes(endpoint.identifier),
    onGroup: () => {},
    onEndpoint: ({ endpoint, mergedAnnotations, middleware }) => {
      const name = endpoint.identifier as FastPathEndpoint
      const json = endpoint.payload.get("application/json")
      if (endpoint.method !== "POST" || json === undefined || json.encoding._tag !== "Json") {
        throw new Error(`fast path: client endpoint ${name} is not a POST with a JSON payload`)
      }
      if (middleware.size !== 1 || [...middleware][0]?.key !== ErrorEnvelope.key) {
        throw new Error(`fast path: client endpoint ${name} has middlewares the fast path does not run`)
      }
      // As `HttpApiBuilder`: the payload's own parse options, else the general ones.
      const options = Context.getOrUndefined(mergedAnnotations, HttpApi.PayloadParseOptions) ??
        Context.getOrUndefined(mergedAnnotations, HttpApi.ParseOptions)
      // Decoded synchronously and without services (the reflected `Schema.Top` does not say so; the client
      // payloads need neither: a decoder that did would fail here, and the differential test with it). Same
      // parser, same issues as `HttpApiBuilder`'s decoding.
      const schema = Schema.Union(json.schemas as ReadonlyArray<Schema.Codec<unknown, unknown, never, never>>)
      routes.set(endpoint.path, { name, decode: Schema.decodeUnknownResult(schema, options) })
    }
  })
  for (const name of fastPathEndpoints) {
    if (![...routes.values()].some((route) => route.name === name)) throw new Error(`fast path: no client endpoint ${name}`)
  }
  return routes
}

/** A route as the fast path serves it: with the pipeline of its namespace (lm/v1 or wplm/v1). */
interface ServedRoute extends Route {
  readonly pipeline: ClientPipeline
}

/**
 * A client write's body decoded by its route's payload schema, or the 400 refusing it: refused text, not JSON,
 * bad fields. Both transports of the WPLM namespace decode with it too (`WplmRoutes.ts`).
 */
export const decodeBody = (route: Route, text: string): Result.Result<unknown, HttpServerResponse.HttpServerResponse> => {
  const refused = refuseBodyText(text)
  if (refused !== undefined) return Result.fail(refused)
  let input: unknown
  try {
    input = JSON.parse(text)
  } catch {
    return Result.fail(invalidJson())
  }
  // The two common validate bodies skip the schema (same output); anything else is the schema's to decode.
  const common = route.name === "validate" ? commonValidatePayload(input) : undefined
  if (common !== undefined) return Result.succeed(common)
  const payload = route.decode(input)
  return Result.isFailure(payload) ? Result.fail(invalidParams(payload.failure, "body")) : Result.succeed(payload.success)
}

const make = Effect.gen(function*() {
  const { maxBodyBytes, restRoot, trustProxyHops, wplmCompat } = yield* HttpSettings
  const steps = yield* makeRequestSteps()
  const pipeline = yield* makeClientPipeline
  const routes = new Map<string, ServedRoute>()
  for (const [path, route] of routesOf()) routes.set(`${restRoot}${path}`, { ...route, pipeline })
  // The WPLM compatibility namespace (CONTRACT §17) answers its writes on this path too.
  if (wplmCompat) {
    const wplm = yield* makeClientPipelineOf(makeWplmAnswers)
    for (const route of routesOf().values()) routes.set(`${restRoot}${wplmRoutes[route.name]}`, { ...route, pipeline: wplm })
  }
  const served: Record<FastPathEndpoint, number> = { validate: 0, activate: 0, deactivate: 0, heartbeat: 0 }
  let atOnce = 0
  const context = yield* Effect.context<never>()
  const run = Effect.runForkWith(context)
  const running = new Set<Fiber.Fiber<HttpServerResponse.HttpServerResponse>>()
  let closed = false
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      closed = true
      return Fiber.interruptAll([...running])
    })
  )

  /** The answer to a body: refused text, not JSON, bad fields, or the client pipeline's answer. */
  const respondTo = (route: ServedRoute, text: string, facts: ClientRequestFacts) => {
    const payload = decodeBody(route, text)
    if (!Result.isSuccess(payload)) return Effect.succeed(payload.failure)
    return route.pipeline(route.name, payload.success as ClientInput<FastPathEndpoint>, facts)
  }

  /** An answer with defects (a throw included) answered 500 with the request id. */
  const orInternalError = (effect: Effect.Effect<HttpServerResponse.HttpServerResponse>, requestId: string, url: string) =>
    Effect.catchCause(
      effect,
      (cause) =>
        // An interrupted request (the client went away) holds no error to answer.
        Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : internalError(cause, requestId, "POST", url)
    )

  /** {@link respondTo}, with defects answered 500. */
  const answer = (route: ServedRoute, text: string, facts: ClientRequestFacts, requestId: string, url: string) =>
    orInternalError(Effect.suspend(() => respondTo(route, text, facts)), requestId, url)

  /**
   * Validate on the caller's stack (`ClientPipeline.validateNow`): the response, or the effect that finishes it
   * (decoded already, guards passed as far as they went); a throw is the 500 of a defect, as on the fiber.
   */
  const answerNow = (
    route: ServedRoute,
    validateNow: NonNullable<ClientPipeline["validateNow"]>,
    text: string,
    facts: ClientRequestFacts,
    requestId: string,
    url: string
  ): HttpServerResponse.HttpServerResponse | Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    try {
      const payload = decodeBody(route, text)
      if (!Result.isSuccess(payload)) return payload.failure
      const now = validateNow(payload.success as ClientInput<"validate">, facts, context)
      if (Effect.isEffect(now)) return orInternalError(now, requestId, url)
      atOnce++
      return now
    } catch (defect) {
      return internalError(Cause.die(defect), requestId, "POST", url)
    }
  }

  // With a tracer installed (OTLP), each request is a server span as on the Effect stack (`HttpMiddleware.tracer`):
  // the caller's `traceparent` honoured, the route and the status as attributes. Without one, nothing is made.
  const tracing = Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer
  const traced = (
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse>,
    request: IncomingMessage,
    url: string,
    facts: ClientRequestFacts
  ) => {
    const parent = Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers as Headers.Headers))
    return Effect.withSpan(
      Effect.tap(effect, (response) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
      "POST",
      {
        kind: "server",
        ...(parent === undefined ? { root: true } : { parent }),
        attributes: {
          "http.request.method": "POST",
          "http.route": url,
          "url.path": url,
          ...(facts.clientIp === undefined ? {} : { "client.address": facts.clientIp })
        }
      }
    )
  }

  /**
   * Writes a response as `NodeHttpServer` does, with the request id; but without `strictContentLength`, which
   * makes Node send the head and the body in two buffers (`writev`) instead of one string: the length is
   * computed from the very text written, so it cannot differ.
   */
  const write = (response: ServerResponse, answer: HttpServerResponse.HttpServerResponse, frame: RequestFrame) => {
    if (response.writableEnded || response.destroyed) return
    frame.answered(answer.status)
    const body = answer.body
    response.writeHead(answer.status, answer.statusText, { ...answer.headers, ...frame.headers })
    response.end(body._tag === "Uint8Array" ? body.text ?? body.body : undefined)
  }

  const serve = (route: ServedRoute, request: IncomingMessage, response: ServerResponse, url: string) => {
    const frame = steps.begin(
      "fast-path",
      "POST",
      url,
      header(request, "x-request-id"),
      header(request, "origin"),
      request.socket.remoteAddress,
      header(request, "x-forwarded-for")
    )
    const chunks: Array<Buffer> = []
    let failed = false
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    // A client that goes away while sending its body: nothing to answer, nothing started.
    request.on("error", () => failed = true)
    request.on("end", () => {
      if (failed || response.destroyed) return
      const text = textDecoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))
      const facts = factsOfNodeRequest(request, trustProxyHops)
      // Validate without a fiber when the pipeline can answer it at once (no tracer: a span needs the fiber).
      const validateNow = route.name === "validate" && !tracing ? route.pipeline.validateNow : undefined
      const answered = validateNow === undefined
        ? answer(route, text, facts, frame.requestId, url)
        : answerNow(route, validateNow, text, facts, frame.requestId, url)
      if (!Effect.isEffect(answered)) return write(response, answered, frame)
      const fiber = run(tracing ? traced(answered, request, url, facts) : answered)
      const done = fiber.pollUnsafe()
      if (done !== undefined) {
        if (Exit.isSuccess(done)) write(response, done.value, frame)
        return
      }
      running.add(fiber)
      fiber.addObserver((exit) => {
        running.delete(fiber)
        if (Exit.isSuccess(exit)) write(response, exit.value, frame)
        else if (!response.writableEnded && !response.destroyed) {
          // Interrupted by the server (shutdown past its grace period): the empty 503 NodeHttpServer sends.
          frame.answered(503)
          response.writeHead(503, undefined, {})
          response.end()
        }
      })
      response.on("close", () => {
        if (!response.writableEnded) fiber.interruptUnsafe()
      })
    })
  }

  const handle = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (closed || request.method !== "POST" || request.httpVersionMajor !== 1) return false
    const url = request.url ?? ""
    const route = routes.get(url)
    if (route === undefined) return false
    const headers = request.headers
    const contentType = headers["content-type"]
    if (contentType === undefined || mediaType(contentType) !== "application/json") return false
    // Another charset than UTF-8: the envelope middleware's 415.
    if (foreignCharset(contentType) !== undefined) return false
    const length = headers["content-length"]
    if (length === undefined || headers["transfer-encoding"] !== undefined || headers.expect !== undefined) return false
    const declared = Number(length)
    if (!(declared > 0 && declared <= maxBodyBytes)) return false
    served[route.name]++
    serve(route, request, response, url)
    return true
  }

  return FastPath.of({ handle, served: () => ({ ...served }), inFlight: () => running.size, answeredAtOnce: () => atOnce })
})
