/**
 * Starts an HTTP server in-process on an ephemeral port, so end-to-end tests speak real HTTP with `fetch`.
 *
 * `startServer(layer)` takes any server layer built with `layerServer(...)` (port 0) and fully provided;
 * `startEchoServer(options)` starts the adapter's own test API (`EchoApi`) with a stub authenticator.
 */
import { Context, Effect, Exit, Layer, Logger, References, Scope } from "effect"
import { HttpServer } from "effect/http"
import type { AuthenticatedKey } from "@lm/api"
import { ApiKeyAuthenticator } from "../../src/server/Authentication.js"
import { layerRestRequestValid } from "../../src/server/BundledGuards.js"
import type { RestRequestGuard } from "../../src/server/Guards.js"
import { ErrorEnvelopeLive } from "../../src/server/ErrorEnvelope.js"
import { AuthenticationLive } from "../../src/server/Authentication.js"
import { layerRoutes, layerServer } from "../../src/server/Http.js"
import { requestIdOfContext } from "../../src/server/Routing.js"
import { apiBase, HttpSettings, type Settings } from "../../src/server/Settings.js"
import { StorageHealth, SystemHandlers } from "../../src/handlers/System.js"
import { EchoApi, TestHandlers } from "./EchoApi.js"

/** A running test server. */
export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** `{origin}{rest_root}/lm/v1` */
  readonly apiBase: string
  /** Stops the server: no new connections, requests in flight finish. */
  readonly close: () => Promise<void>
  /** Runs an effect with the server's services (e.g. the domain's), for setting up and inspecting state. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, any>) => Promise<A>
}

/**
 * Builds a server layer (one that provides `HttpServer`, e.g. `layerServer(..., { port: 0 })` with everything
 * provided) and returns its address. `restRoot` is only used to compute `apiBase`.
 */
export const startServer = async <E>(
  layer: Layer.Layer<HttpServer.HttpServer, E>,
  options: { readonly restRoot?: string } = {}
): Promise<RunningServer> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope)).catch(async (error) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  const server = Context.get(context, HttpServer.HttpServer)
  const origin = HttpServer.formatAddress(server.address)
  return {
    origin,
    apiBase: apiBase(origin, { restRoot: options.restRoot ?? "/api" }),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void)),
    run: (effect) => Effect.runPromise(Effect.provideContext(effect, context as Context.Context<any>))
  }
}

/** A key known to the stub authenticator. */
export interface TestKey extends AuthenticatedKey {
  readonly consumerKey: string
  readonly consumerSecret: string
}

const hex = (digit: string) => digit.repeat(40)

/** One key per scope, plus the Basic header for each. */
export const testKeys = {
  read: { id: 1, scope: "read", consumerKey: `ck_${hex("1")}`, consumerSecret: `cs_${hex("a")}` },
  write: { id: 2, scope: "write", consumerKey: `ck_${hex("2")}`, consumerSecret: `cs_${hex("b")}` },
  read_write: { id: 3, scope: "read_write", consumerKey: `ck_${hex("3")}`, consumerSecret: `cs_${hex("c")}` }
} as const satisfies Record<string, TestKey>

/** `Basic base64(key:secret)` */
export const basic = (consumerKey: string, consumerSecret: string): string =>
  `Basic ${Buffer.from(`${consumerKey}:${consumerSecret}`).toString("base64")}`

/** An authenticator that knows {@link testKeys}. */
export const stubAuthenticator = Layer.succeed(ApiKeyAuthenticator, {
  authenticate: (consumerKey, consumerSecret) =>
    Effect.succeed(
      Object.values(testKeys).find((key) => key.consumerKey === consumerKey && key.consumerSecret === consumerSecret)
    ).pipe(Effect.map((key) => key === undefined ? undefined : { id: key.id, scope: key.scope }))
})

/** A log line captured from the server. */
export interface CapturedLog {
  readonly level: string
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
  readonly cause: string
  /** The id of the request the logging fiber served (`requestIdOfContext`), if any. */
  readonly requestId: string | undefined
}

/** Options of {@link startEchoServer}. */
export interface EchoServerOptions {
  readonly settings?: Partial<Settings>
  /** Replaces the stub authenticator. */
  readonly authenticator?: ApiKeyAuthenticator["Service"]
  /** Guards run after the bundled ones. */
  readonly guards?: ReadonlyArray<RestRequestGuard>
  readonly storage?: StorageHealth["Service"]
  /** Receives every log line (none are printed when given). */
  readonly logs?: Array<CapturedLog>
}

/** The server layer of `EchoApi` (with the stub authenticator) on `listen`. */
export const echoServerLayer = (options: EchoServerOptions = {}, listen = { host: "127.0.0.1", port: 0 }) => {
  const settings = HttpSettings.layer(options.settings)
  const middlewares = Layer.mergeAll(ErrorEnvelopeLive, AuthenticationLive).pipe(
    Layer.provide(layerRestRequestValid(options.guards)),
    Layer.provide(options.authenticator === undefined ? stubAuthenticator : Layer.succeed(ApiKeyAuthenticator, options.authenticator))
  )
  const handlers = Layer.mergeAll(SystemHandlers, TestHandlers).pipe(
    Layer.provide(middlewares),
    Layer.provide(Layer.succeed(StorageHealth, options.storage ?? { storage: "memory", check: Effect.void }))
  )
  const logs = options.logs
  const logger = logs === undefined
    ? Layer.empty
    : Logger.layer([Logger.make((entry) => {
      logs.push({
        level: entry.logLevel,
        message: Array.isArray(entry.message) ? entry.message.map(String).join(" ") : String(entry.message),
        annotations: entry.fiber.getRef(References.CurrentLogAnnotations),
        cause: String(entry.cause),
        requestId: requestIdOfContext(entry.fiber.context)
      })
    })])
  return layerServer(layerRoutes(EchoApi).pipe(Layer.provide(handlers)), listen).pipe(
    Layer.provide(settings),
    Layer.provide(logger)
  )
}

/** Starts `EchoApi` on 127.0.0.1 on a free port. */
export const startEchoServer = (options: EchoServerOptions = {}): Promise<RunningServer> =>
  startServer(echoServerLayer(options), { restRoot: HttpSettings.make(options.settings).restRoot })
