/**
 * The composition of the HTTP server: an `HttpApi` mounted at `LM_REST_ROOT` with `openapi.json` beside it and
 * the envelope around every route, served by Node's HTTP server.
 *
 * The composition root wires it as:
 * ```ts
 * const Handlers = Layer.mergeAll(SystemHandlers, MyGroupHandlers).pipe(Layer.provide(Middlewares))
 * const Server = layerServer(layerRoutes(Api).pipe(Layer.provide(Handlers)), { host, port })
 * ```
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { createServer as createHttpsServer } from "node:https"
import type { TLSSocket } from "node:tls"
import { Server as NetServer, type Socket } from "node:net"
import type { Duplex } from "node:stream"
// The module itself, not the package index: that loads every module, NodeRedis (and node-redis) among them.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApi, HttpApiGroup } from "effect/http-api"
import { HttpApiBuilder, OpenApi } from "effect/http-api"
import { openApiPath } from "@lm/api"
import { AuthenticationLive } from "./Authentication.js"
import { makeBodyDeadlines } from "./BodyTimeout.js"
import { ErrorEnvelopeLive } from "./ErrorEnvelope.js"
import { IdempotencyLive } from "./Idempotency.js"
import { FastPath, type FastPathService } from "./FastPath.js"
import { layerRestRequestValid } from "./BundledGuards.js"
import { forwardedHttps, requestOrigin } from "./ClientIp.js"
import { makeRequestSteps, requestIdFor } from "./RequestSteps.js"
import { makeRouteTable, mountAt, requestEnvelope } from "./Routing.js"
import { apiBase, checkTls, HttpSettings, InvalidSetting, type Listen, type Settings } from "./Settings.js"

/** The OpenAPI document of an API as served under `restRoot` (paths include `restRoot`). */
export const openApiDocument = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  restRoot: string
): OpenApi.OpenAPISpec =>
  OpenApi.fromApi((restRoot === "" ? api : api.prefix(restRoot as HttpRouter.PathInput)) as HttpApi.HttpApi<Id, Groups>)

/**
 * The document with `origin` (the scheme and host a client reached the server at) as its one server: its paths
 * already hold `restRoot`. Without an origin (no usable `Host`) it is left without servers.
 */
export const withServer = (document: OpenApi.OpenAPISpec, origin: string | undefined): OpenApi.OpenAPISpec =>
  origin === undefined ? document : { ...document, servers: [{ url: origin, description: "This server." }] }

/**
 * The routes of `api` under `HttpSettings.restRoot`, plus `GET {api_base}/openapi.json` and the global request
 * envelope (request ids, 404/405/413/500). Provide the group handlers (`HttpApiBuilder.group(api, ...)`).
 */
export const layerRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint, E = never, R = never>(
  api: HttpApi.HttpApi<Id, Groups>,
  /** Routes served beside the API's (an embedder's), mounted the same way. */
  extraRoutes: Layer.Layer<never, E, R | HttpRouter.HttpRouter> = Layer.empty as Layer.Layer<never, E, R | HttpRouter.HttpRouter>
) =>
  Layer.unwrap(Effect.gen(function*() {
    const { maxBodyBytes, restRoot, trustProxyHops } = yield* HttpSettings
    const table = makeRouteTable()
    // Built on the first request, then kept; each answer names the origin the client reached as its server.
    let document: OpenApi.OpenAPISpec | undefined
    const openApiRoute = HttpRouter.add(
      "GET",
      openApiPath,
      Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
        HttpServerResponse.jsonUnsafe(withServer(document ??= openApiDocument(api, restRoot), requestOrigin(request, trustProxyHops))))
    )
    return Layer.mergeAll(HttpApiBuilder.layer(api), openApiRoute, extraRoutes, requestEnvelope({
      table,
      maxBodyBytes,
      steps: yield* makeRequestSteps(table.routeOf)
    })).pipe(
      Layer.provide(mountAt(restRoot, table))
    )
  }))

/** `Strict-Transport-Security` on every answer over TLS: browsers keep to HTTPS for a year. */
export const hstsHeader = "max-age=31536000"

/** How Node's parser refusals and timeouts are answered: status, reason phrase, code, message. */
const clientErrorAnswer = (code: string | undefined) => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [413, "Payload Too Large", "rest_payload_too_large", "The request line or headers are too large."] as const
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, "Request Timeout", "rest_request_timeout", "The request did not arrive in time."] as const
    default:
      return [400, "Bad Request", "rest_invalid_param", "The request could not be parsed as HTTP."] as const
  }
}

/**
 * How long the answer to a client error may take to reach the network before its socket is destroyed anyway: a
 * client that reads nothing never lets a write flush.
 */
export const clientErrorFlushMillis = 1000

/**
 * Destroys `socket` once what was written to it has been handed to the network (`finish`), or after
 * {@link clientErrorFlushMillis}, whichever comes first. Ending alone leaves it half-closed for as long as the
 * client keeps its side open (a client that never reads never sees the FIN), holding a connection slot.
 */
const destroyWhenFlushed = (socket: Duplex): void => {
  const destroy = () => {
    clearTimeout(timer)
    socket.destroy()
  }
  const timer = setTimeout(destroy, clientErrorFlushMillis)
  timer.unref()
  socket.once("finish", destroy)
  socket.once("close", () => clearTimeout(timer))
}

/**
 * Requests Node's parser rejects before any route sees them (a request line or headers over its limit, a
 * malformed request) and requests that did not arrive within the headers or body timeout (CONTRACT §12: 408
 * `rest_request_timeout`) are answered in the envelope too, with a request id and `Connection: close`, instead
 * of Node's bare status line; then the socket is destroyed ({@link destroyWhenFlushed}). A connection whose
 * answer has already begun is closed without one.
 */
export const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex, answering = false): void => {
  if (answering || !socket.writable || error.code === "ECONNRESET") {
    socket.destroy()
    return
  }
  const [status, reason, code, message] = clientErrorAnswer(error.code)
  const body = JSON.stringify({ success: false, code, message, data: { status } })
  const hsts = (socket as Partial<TLSSocket>).encrypted === true ? `strict-transport-security: ${hstsHeader}\r\n` : ""
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${randomUUID()}\r\n${hsts}connection: close\r\n\r\n${body}`
  )
  destroyWhenFlushed(socket)
}

/**
 * Closes at once a connection over the per-address cap (`maxConnectionsPerIp`, counted by the TCP peer's
 * address, never a header); Node's `maxConnections` closes one over the server's cap the same way. A closed
 * connection is cheaper than an answer for a client that holds too many already.
 */
const limitConnections = (server: Server, settings: Pick<Settings, "maxConnections" | "maxConnectionsPerIp">) => {
  server.maxConnections = settings.maxConnections
  const open = new Map<string, number>()
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? ""
    const count = (open.get(address) ?? 0) + 1
    if (count > settings.maxConnectionsPerIp) {
      socket.destroy()
      return
    }
    open.set(address, count)
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
}

/**
 * Node's HTTP server, or HTTPS server with `settings.tls`, with the headers timeout of `settings` (checked every
 * quarter of it, at most every second; the body timeouts are per route, `BodyTimeout.ts`) and the connection caps. A certificate and key Node
 * cannot use refuse the start.
 */
const makeNodeServer = (settings: Settings): Effect.Effect<Server, InvalidSetting> =>
  Effect.andThen(settings.tls === undefined ? Effect.void : checkTls(settings.tls), Effect.sync(() => {
    const headersTimeout = settings.headersTimeoutSeconds * 1000
    const options = {
      headersTimeout,
      // Node's total request timeout is off: the body's time bound is per route (`BodyTimeout.ts`).
      requestTimeout: 0,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(headersTimeout / 4))
    }
    // An HTTPS server is an HTTP server over TLS sockets: the same requests, responses and events.
    const server: Server = settings.tls === undefined
      ? createServer(options)
      : createHttpsServer({ ...options, cert: settings.tls.cert, key: settings.tls.key })
    limitConnections(server, settings)
    return server
  }))

/** A header sent once (a repeated one is read as absent). */
const singleHeader = (value: string | Array<string> | undefined): string | undefined => typeof value === "string" ? value : undefined

/** The 403 of `LM_FORCE_HTTPS` to a request that did not arrive over TLS. */
const refuseHttp = (request: IncomingMessage, response: ServerResponse) => {
  const body = JSON.stringify({
    success: false,
    code: "rest_forbidden",
    message: "HTTPS is required: send the request over https://.",
    data: { status: 403 }
  })
  response.writeHead(403, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "x-request-id": requestIdFor(singleHeader(request.headers["x-request-id"]))
  })
  response.end(body)
}

/**
 * The middlewares every API needs: the error envelope, authentication with the bundled guard chain
 * (IP allow-list), and idempotent management writes. Needs an `ApiKeyAuthenticator`, `HttpSettings` and the
 * domain's `Idempotency`.
 */
export const layerMiddlewares = Layer.mergeAll(ErrorEnvelopeLive, AuthenticationLive, IdempotencyLive).pipe(
  Layer.provide(layerRestRequestValid())
)

/** A port the server cannot listen on (in use, an address not of this host) refuses the start, naming the settings. */
const cannotListen = (options: NodeHttpServer.Options) => (error: { readonly cause: unknown }) =>
  new InvalidSetting({
    name: "PORT",
    message: `PORT, HOST: cannot listen on ${options.host}:${options.port} (${
      (error.cause as NodeJS.ErrnoException | undefined)?.code ?? String(error.cause)
    })`
  })

/** How long after SIGTERM idle keep-alive connections stay open, so that a request already on its way is answered. */
export const drainGraceMillis = 1000

/** The number of requests a server has received so far, advanced as each arrives. */
export interface RequestCounter {
  started: number
}

/**
 * Node's HTTP server as `NodeHttpServer` serves it (listening, request, `Expect: 100-continue` and upgrade
 * handling), with our own `request` listener in front of NodeHttpServer's handler: it offers each request to
 * `fastPath` first (when given) and calls the handler `NodeHttpServer` registered for the requests the fast path
 * leaves. (Serving with `NodeHttpServer.makeHandler` alone would answer `100 Continue` before routing, not when
 * the body is first read: NodeHttpServer's 100-continue handling is its own.)
 *
 * Shutdown (CONTRACT §13, SIGTERM) is ours, before NodeHttpServer's: the server stops listening; from then on
 * every answer, those in flight included, carries `Connection: close` (Node closes the socket after it); for
 * {@link drainGraceMillis} open connections are still served (a client that had just sent a request on a
 * kept-alive connection gets its answer, not a reset), then idle ones are closed; requests in flight finish. It
 * ends when the last connection has closed, or after `drainTimeoutMillis` (what still runs is then interrupted).
 */
const layerNodeServer = (
  server: Server,
  fastPath: FastPathService | undefined,
  options: NodeHttpServer.Options,
  drainTimeoutMillis: number,
  settings: Settings,
  requests: RequestCounter | undefined
) =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.map(NodeHttpServer.make(() => server, options).pipe(Effect.mapError(cannotListen(options))), (node) =>
      HttpServer.make({
        address: node.address,
        serve: (httpApp, middleware) =>
          Effect.gen(function*() {
            const before = new Set(server.listeners("request"))
            yield* (middleware === undefined ? node.serve(httpApp) : node.serve(httpApp, middleware))
            const added = server.listeners("request").filter((listener) => !before.has(listener))
            if (added.length !== 1) {
              return yield* Effect.die(new Error(`fast path: NodeHttpServer registered ${added.length} request listeners, expected 1`))
            }
            const handler = added[0] as (request: IncomingMessage, response: ServerResponse) => void
            // The latest response of each open connection: the ones still to be written get `Connection: close`
            // when draining starts; one already begun is not followed by a 408 or 400 (`answerClientError`).
            const latest = new Map<Duplex, ServerResponse>()
            const forget = (socket: Duplex) => () => latest.delete(socket)
            server.on("clientError", (error: Error, socket: Duplex) => {
              const response = latest.get(socket)
              answerClientError(error, socket, response !== undefined && response.headersSent && !response.writableFinished)
            })
            let draining = false
            const tls = settings.tls !== undefined
            const { forceHttps, trustProxyHops } = settings
            const bodyDeadline = makeBodyDeadlines(server, settings.bodyTimeoutSeconds * 1000)
            const offer = (request: IncomingMessage, response: ServerResponse) => {
              bodyDeadline(request)
              if (requests !== undefined) requests.started++
              if (draining) response.shouldKeepAlive = false
              const socket = request.socket
              if (!latest.has(socket)) socket.once("close", forget(socket))
              latest.set(socket, response)
              const overTls = tls && (socket as TLSSocket).encrypted === true
              if (overTls) response.setHeader("strict-transport-security", hstsHeader)
              else if (forceHttps && !forwardedHttps(singleHeader(request.headers["x-forwarded-proto"]), trustProxyHops)) {
                return refuseHttp(request, response)
              }
              if (fastPath === undefined || !fastPath.handle(request, response)) handler(request, response)
            }
            server.off("request", handler).on("request", offer)
            const drain = Effect.callback<void>((resume) => {
              draining = true
              for (const response of latest.values()) {
                if (!response.headersSent) response.shouldKeepAlive = false
              }
              // After the grace, idle connections are closed, again as answers begun before the signal finish.
              let idle: ReturnType<typeof setInterval> | undefined
              const grace = setTimeout(() => {
                server.closeIdleConnections()
                idle = setInterval(() => server.closeIdleConnections(), 250)
              }, drainGraceMillis)
              const limit = setTimeout(() => finish(), drainTimeoutMillis)
              let done = false
              const finish = () => {
                if (done) return
                done = true
                clearTimeout(grace)
                clearInterval(idle)
                clearTimeout(limit)
                resume(Effect.void)
              }
              // Stops listening without `http.Server#close`'s immediate closing of idle connections; called back
              // once every connection has closed. Not at once: closing the listener resets the connections still
              // queued in the kernel, which their clients believe open (a busy process may not have accepted them
              // yet when the signal comes). The second `setImmediate` runs after the next poll phase, which accepts
              // every connection queued before the signal.
              setImmediate(() =>
                setImmediate(() => server.listening ? NetServer.prototype.close.call(server, finish) : finish())
              )
            })
            // Runs before NodeHttpServer's own shutdown (finalizers run last in, first out), which then finds the
            // server closed and removes its handler; the fast path's layer closes after.
            yield* Effect.addFinalizer(() =>
              Effect.andThen(drain, Effect.sync(() => server.off("request", offer).on("request", handler)))
            )
          })
      }))
  )

/**
 * Serves `routes` with Node's HTTP server (HTTPS with `HttpSettings.tls`; `forceHttps` refuses plain HTTP) on
 * `listen.host`:`listen.port` (port 0 picks a free port; read the bound address from `HttpServer.HttpServer`),
 * with `HttpSettings`' connection caps and headers and body timeouts (408). Request bodies are read up to `HttpSettings.maxBodyBytes`.
 * Closing the layer's scope (SIGTERM under `NodeRuntime.runMain`) drains the server (see `layerNodeServer`):
 * no new connections, `Connection: close` on every answer, idle connections closed after 1 s, requests in
 * flight finished (up to `gracefulShutdownSeconds`, default 20). Logs the API base URL once listening.
 * When a {@link FastPath} is provided and `HttpSettings.fastPath` is on, it answers the hot client writes in
 * front of the router; provide it below this layer, so that it closes after the server has finished its
 * requests in flight.
 */
export const layerServer = <E, R>(
  routes: Layer.Layer<never, E, R>,
  listen: Listen & {
    readonly gracefulShutdownSeconds?: number | undefined
    readonly logExtra?: string | undefined
    /** Counts the requests received (webhook delivery yields to them). */
    readonly requests?: RequestCounter | undefined
  }
) =>
  Layer.unwrap(Effect.gen(function*() {
    const settings = yield* HttpSettings
    const fastPath = settings.fastPath ? Option.getOrUndefined(yield* Effect.serviceOption(FastPath)) : undefined
    const served = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true })
    const drainTimeoutMillis = (listen.gracefulShutdownSeconds ?? 20) * 1000
    const options: NodeHttpServer.Options = { host: listen.host, port: listen.port, gracefulShutdownTimeout: `${drainTimeoutMillis} millis` }
    const logListening = Layer.effectDiscard(Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const origin = HttpServer.formatAddress(server.address)
      const base = apiBase(settings.tls === undefined ? origin : origin.replace(/^http:/, "https:"), settings)
      yield* Effect.logInfo(`Listening on ${base}${listen.logExtra === undefined ? "" : ` (${listen.logExtra})`}`)
      yield* Effect.addFinalizer(() => Effect.logInfo("Shutting down: no new connections; finishing requests in flight"))
    }))
    return logListening.pipe(
      Layer.provideMerge(served),
      Layer.provideMerge(Layer.mergeAll(
        layerNodeServer(yield* makeNodeServer(settings), fastPath, options, drainTimeoutMillis, settings, listen.requests),
        NodeHttpServer.layerHttpServices
      )),
      Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(settings.maxBodyBytes)))
    )
  }))
