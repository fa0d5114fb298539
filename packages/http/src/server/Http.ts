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
import type { Duplex } from "node:stream"
import { NodeHttpServer } from "@effect/platform-node"
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import type { HttpApi, HttpApiGroup } from "effect/http-api"
import { HttpApiBuilder, OpenApi } from "effect/http-api"
import { openApiPath } from "../api/Api.js"
import { AuthenticationLive } from "./Authentication.js"
import { makeCorsPolicy } from "./Cors.js"
import { ErrorEnvelopeLive } from "./ErrorEnvelope.js"
import { FastPath, type FastPathService } from "./FastPath.js"
import { RestRequestValid } from "./Guards.js"
import { makeRouteTable, mountAt, requestEnvelope } from "./Routing.js"
import { apiBase, HttpSettings, type Listen } from "./Settings.js"

/** The OpenAPI document of an API as served under `restRoot` (paths include `restRoot`). */
export const openApiDocument = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  restRoot: string
): OpenApi.OpenAPISpec =>
  OpenApi.fromApi((restRoot === "" ? api : api.prefix(restRoot as HttpRouter.PathInput)) as HttpApi.HttpApi<Id, Groups>)

/**
 * The routes of `api` under `HttpSettings.restRoot`, plus `GET {api_base}/openapi.json` and the global request
 * envelope (request ids, 404/405/413/500). Provide the group handlers (`HttpApiBuilder.group(api, ...)`).
 */
export const layerRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) =>
  Layer.unwrap(Effect.gen(function*() {
    const { corsOrigins, maxBodyBytes, restRoot } = yield* HttpSettings
    const table = makeRouteTable()
    // Built on the first request, then kept.
    let document: HttpServerResponse.HttpServerResponse | undefined
    const openApiRoute = HttpRouter.add(
      "GET",
      openApiPath,
      Effect.sync(() => document ??= HttpServerResponse.jsonUnsafe(openApiDocument(api, restRoot)))
    )
    return Layer.mergeAll(HttpApiBuilder.layer(api), openApiRoute, requestEnvelope({
      table,
      maxBodyBytes,
      cors: makeCorsPolicy({ restRoot, corsOrigins })
    })).pipe(
      Layer.provide(mountAt(restRoot, table))
    )
  }))

/**
 * Requests Node's parser rejects before any route sees them (a request line or headers over its limit, a
 * malformed request) are answered in the envelope too, with a request id, instead of Node's bare status line.
 */
export const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  if (!socket.writable || (error as { readonly code?: string }).code === "ECONNRESET") {
    socket.destroy()
    return
  }
  const tooLarge = error.code === "HPE_HEADER_OVERFLOW"
  const status = tooLarge ? 413 : 400
  const body = JSON.stringify({
    success: false,
    code: tooLarge ? "rest_payload_too_large" : "rest_invalid_param",
    message: tooLarge ? "The request line or headers are too large." : "The request could not be parsed as HTTP.",
    data: { status }
  })
  socket.end(
    `HTTP/1.1 ${status} ${tooLarge ? "Payload Too Large" : "Bad Request"}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`
  )
}

/**
 * The middlewares every API needs: the error envelope, and authentication with the bundled guard chain
 * (IP allow-list). Needs an `ApiKeyAuthenticator` and `HttpSettings`.
 */
export const layerMiddlewares = Layer.mergeAll(ErrorEnvelopeLive, AuthenticationLive).pipe(
  Layer.provide(RestRequestValid.layerBundled())
)

/**
 * Node's HTTP server as `NodeHttpServer` serves it (listening, request, `Expect: 100-continue` and upgrade
 * handling, graceful shutdown), with `fastPath` offered every request before NodeHttpServer's handler: the
 * server's `request` listener is ours, and calls the handler `NodeHttpServer` registered for the requests the
 * fast path leaves. (Serving with `NodeHttpServer.makeHandler` alone would answer `100 Continue` before
 * routing, not when the body is first read: NodeHttpServer's 100-continue handling is its own.)
 */
const layerNodeServer = (server: Server, fastPath: FastPathService, options: NodeHttpServer.Options) =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.map(NodeHttpServer.make(() => server, options), (node) =>
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
            const offer = (request: IncomingMessage, response: ServerResponse) => {
              if (!fastPath.handle(request, response)) handler(request, response)
            }
            server.off("request", handler).on("request", offer)
            // When serving stops, NodeHttpServer's handler is put back first (finalizers run last in, first
            // out); its shutdown then lets requests in flight finish (later ones on open connections go through
            // the Effect stack, with the same answers) and removes it. The fast path's layer closes after.
            yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", offer).on("request", handler)))
          })
      }))
  )

/**
 * Serves `routes` with Node's HTTP server on `listen.host`:`listen.port` (port 0 picks a free port; read the
 * bound address from `HttpServer.HttpServer`). Request bodies are read up to `HttpSettings.maxBodyBytes`.
 * Closing the layer's scope (SIGTERM under `NodeRuntime.runMain`) stops accepting connections and lets
 * requests in flight finish (up to `gracefulShutdownSeconds`, default 20). Logs the API base URL once listening.
 * When a {@link FastPath} is provided and `HttpSettings.fastPath` is on, it answers the hot client writes in
 * front of the router; provide it below this layer, so that it closes after the server has finished its
 * requests in flight.
 */
export const layerServer = <E, R>(
  routes: Layer.Layer<never, E, R>,
  listen: Listen & { readonly gracefulShutdownSeconds?: number | undefined; readonly logExtra?: string | undefined }
) =>
  Layer.unwrap(Effect.gen(function*() {
    const settings = yield* HttpSettings
    const fastPath = settings.fastPath ? Option.getOrUndefined(yield* Effect.serviceOption(FastPath)) : undefined
    const served = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true })
    const options: NodeHttpServer.Options = {
      host: listen.host,
      port: listen.port,
      gracefulShutdownTimeout: `${listen.gracefulShutdownSeconds ?? 20} seconds`
    }
    const logListening = Layer.effectDiscard(Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const base = apiBase(HttpServer.formatAddress(server.address), settings)
      yield* Effect.logInfo(`Listening on ${base}${listen.logExtra === undefined ? "" : ` (${listen.logExtra})`}`)
      yield* Effect.addFinalizer(() => Effect.logInfo("Shutting down: no new connections; finishing requests in flight"))
    }))
    return logListening.pipe(
      Layer.provideMerge(served),
      Layer.provideMerge(
        fastPath === undefined
          ? NodeHttpServer.layer(() => createServer().on("clientError", answerClientError), options)
          : Layer.mergeAll(
            layerNodeServer(createServer().on("clientError", answerClientError), fastPath, options),
            NodeHttpServer.layerHttpServices
          )
      ),
      Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(settings.maxBodyBytes)))
    )
  }))
