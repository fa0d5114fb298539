/**
 * The steps every request takes whichever transport answers it (the Effect HTTP stack, in its global middleware
 * `Routing.requestEnvelope`; the fast path, `FastPath.ts`), written once here:
 * - its request id: the client's `X-Request-Id` when short and plain, else a new UUID;
 * - the headers every answer carries, errors included: `X-Request-Id`, and the CORS headers of the policy
 *   (`Cors.ts`) for the request's path and `Origin`;
 * - the report of its answer to the {@link RequestObserver}, where per-request metrics plug in.
 * The guards (`ClientPipeline.ts`, `Guards.ts`) and the error envelope (`Responses.ts`, `ErrorEnvelope.ts`,
 * `Routing.internalError`) are shared the same way, by the modules that define them.
 */
import { randomUUID } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { clientIpFrom } from "./ClientIp.js"
import { type CorsPolicy, makeCorsPolicy } from "./Cors.js"
import { HttpSettings } from "./Settings.js"

/** An incoming `X-Request-Id` is reused when it is short and plain; otherwise a new one is made. */
const saneRequestId = /^[A-Za-z0-9._:@+=-]{1,128}$/

/** The request id for a request: the client's own when sane, else a fresh UUID. */
export const requestIdFor = (incoming: string | undefined): string =>
  incoming !== undefined && saneRequestId.test(incoming) ? incoming : randomUUID()

/** Which transport answered a request. */
export type Transport = "fast-path" | "effect"

/** A request once answered, as the {@link RequestObserver} sees it. */
export interface AnsweredRequest {
  readonly transport: Transport
  readonly method: string
  /** The path, without the query string (a query may carry a license key or a download token). */
  readonly path: string
  /** The template of the route that answered (`/api/lm/v1/licenses/:id`), or `unmatched` when none did. */
  readonly route: string
  readonly status: number
  readonly requestId: string
  /** Milliseconds from the transport taking the request to its answer being ready. */
  readonly durationMillis: number
  /** The client's address, as `LM_TRUST_PROXY` says to read it (`ClientIp.ts`); worked out when asked. */
  readonly clientIp: () => string | undefined
}

/**
 * Told of every answered request, on both transports: the hook of per-request metrics. None by default; then
 * nothing is measured per request. It runs as the answer is made, so it must be quick; what it throws is ignored.
 */
export const RequestObserver = Context.Reference<((request: AnsweredRequest) => void) | undefined>(
  "lm/http/RequestObserver",
  { defaultValue: () => undefined }
)

/** A request observer, made with the context it reports through (its metric registry, its loggers). */
export type RequestObserverMaker = Effect.Effect<(request: AnsweredRequest) => void>

/**
 * The {@link RequestObserver} telling each of `observers` (per-request metrics, the access log) of every answered
 * request, after the observer already provided, if any (an embedder's); none when there is none at all. Provide
 * it below the server.
 */
export const layerRequestObservers = (observers: ReadonlyArray<RequestObserverMaker>) =>
  Layer.effect(
    RequestObserver,
    Effect.gen(function*() {
      const outer = yield* RequestObserver
      const made = yield* Effect.all(observers)
      const all = outer === undefined ? made : [outer, ...made]
      if (all.length <= 1) return all[0]
      return (request: AnsweredRequest) => {
        for (const observe of all) {
          try {
            observe(request)
          } catch {
            // One failing observer must not keep the others from their report.
          }
        }
      }
    })
  )

/** One request under way. */
export interface RequestFrame {
  readonly requestId: string
  /** The headers every answer to it carries: `X-Request-Id`, then the CORS headers. */
  readonly headers: Readonly<Record<string, string>>
  /** Reports the answer's status to the observer (a no-op without one). */
  readonly answered: (status: number) => void
}

/** The steps, as the transports use them. */
export interface RequestSteps {
  /** The CORS policy (the Effect stack also answers preflights with it; the fast path never takes one). */
  readonly cors: CorsPolicy
  /** Starts a request: its id, its answers' headers, its report. */
  readonly begin: (
    transport: Transport,
    method: string,
    url: string,
    requestIdHeader: string | undefined,
    origin: string | undefined,
    /** The socket's remote address and the `X-Forwarded-For` header: the client IP, read only when observed. */
    socketAddress: string | undefined,
    forwardedFor: string | undefined
  ) => RequestFrame
}

const unobserved = (_status: number): void => {}

const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** The route of a request that no route answered. */
export const unmatchedRoute = "unmatched"

/**
 * The template of the route serving `method` and `path`, or undefined; asked only when an observer is told of the
 * request. By default the path itself (the fast path's routes are exact paths).
 */
export type RouteOf = (method: string, path: string) => string | undefined

/**
 * The steps for `HttpSettings`' rest root and CORS origins, reporting to the provided {@link RequestObserver} with
 * the route `routeOf` finds.
 */
export const makeRequestSteps = (
  routeOf: RouteOf = (_method, path) => path
): Effect.Effect<RequestSteps, never, HttpSettings> => Effect.gen(function*() {
  const { corsOrigins, restRoot, trustProxyHops } = yield* HttpSettings
  const observe = yield* RequestObserver
  const cors = makeCorsPolicy({ restRoot, corsOrigins })
  const begin: RequestSteps["begin"] = (transport, method, url, requestIdHeader, origin, socketAddress, forwardedFor) => {
    const requestId = requestIdFor(requestIdHeader)
    const corsHeaders = cors.headersFor(url, origin)
    const headers = corsHeaders === undefined ? { "x-request-id": requestId } : { "x-request-id": requestId, ...corsHeaders }
    if (observe === undefined) return { requestId, headers, answered: unobserved }
    const started = performance.now()
    return {
      requestId,
      headers,
      answered: (status) => {
        try {
          const path = pathOf(url)
          const route = routeOf(method, path) ?? unmatchedRoute
          const durationMillis = performance.now() - started
          const clientIp = () => clientIpFrom(socketAddress, forwardedFor, trustProxyHops)
          observe({ transport, method, path, route, status, requestId, durationMillis, clientIp })
        } catch {
          // A failing observer must not change the answer.
        }
      }
    }
  }
  return { cors, begin }
})
