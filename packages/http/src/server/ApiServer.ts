/**
 * The lm/v1 API served on the engine: every group's handlers with the middlewares (`layerApiRoutes`), and the
 * server with both request transports, the fast path in front of the Effect HTTP stack, and the public guards
 * (`layerApiServer`), with the browser console beside the API when given. What the engine runs on, and where the
 * settings come from, is the application's choice (`apps/server`).
 */
import { Effect, Layer } from "effect"
// `Services` names the engine's services in the declarations of the layers below.
import { ApiKeys, Ports, type Services } from "@lm/domain"
import { Api } from "@lm/api"
import { ApiHandlers, mergeEntries } from "../handlers/ApiHandlers.js"
import { StorageHealth } from "../handlers/System.js"
import { ApiKeyAuthenticator } from "./Authentication.js"
import { FastPath } from "./FastPath.js"
import { layerMiddlewares, layerRoutes, layerServer, type RequestCounter } from "./Http.js"
import { layerClientRateLimit } from "./BundledGuards.js"
import { layerConsoleRoutes } from "./Console.js"
import { ReleaseRoutes } from "./ReleaseRoutes.js"
import { HttpSettings, type Listen } from "./Settings.js"
import { layerWplmRoutes } from "./WplmRoutes.js"

/** API credentials checked against the domain's API keys. */
const authenticatorLayer = Layer.effect(
  ApiKeyAuthenticator,
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return ApiKeyAuthenticator.of({
      authenticate: (consumerKey, consumerSecret) =>
        apiKeys.authenticate(consumerKey, consumerSecret).pipe(
          Effect.map((key) => ({ id: key.id, scope: key.scope })),
          Effect.catchTag("Unauthorized", () => Effect.succeed(undefined))
        )
    })
  })
)

/** The store as `/health` sees it. */
const storageHealthLayer = (storage: string) =>
  Layer.effect(
    StorageHealth,
    Effect.map(Ports.Store, (store) => StorageHealth.of({ storage, check: store.ping }))
  )

/** The routes of the whole API with their handlers, middlewares and health check (naming the store `storage`), on an engine. */
export const layerApiRoutes = (storage: string) => {
  const handlers = mergeEntries(ApiHandlers).pipe(
    Layer.provide(ReleaseRoutes.layer),
    Layer.provide(layerMiddlewares),
    Layer.provide(authenticatorLayer),
    Layer.provide(storageHealthLayer(storage))
  )
  return layerRoutes(Api, layerWplmRoutes).pipe(
    Layer.provide(handlers),
    Layer.provide(authenticatorLayer),
    Layer.provide(storageHealthLayer(storage))
  )
}

/** The console's files in `dir` at `{base_url}/console/`, outside the API's mount at `restRoot` (`Console.ts`). */
const layerConsole = (dir: string) =>
  Layer.unwrap(Effect.map(HttpSettings, ({ restRoot }) => layerConsoleRoutes({ dir, restRoot })))

/**
 * The whole API on an engine, listening on `listen`: {@link layerApiRoutes} served by `layerServer` (with the
 * console's files when `consoleDir` is given), the fast path in front of it, and the public guards (the engine's
 * rate limiter) for both. Needs the engine's services, an artifact store and `HttpSettings`.
 */
export const layerApiServer = (options: {
  /** The store's name, as `/health` reports it. */
  readonly storage: string
  readonly listen: Listen
  /** Said after the address in the start-up line, e.g. `store: memory (not durable)`. */
  readonly logExtra?: string | undefined
  /** Counts the requests received (batched background jobs yield to them). */
  readonly requests?: RequestCounter | undefined
  /** The folder of the built browser console (`apps/console`), served at `{base_url}/console/`; none when undefined. */
  readonly consoleDir?: string | undefined
}) =>
  layerServer(
    options.consoleDir === undefined
      ? layerApiRoutes(options.storage)
      : Layer.merge(layerApiRoutes(options.storage), layerConsole(options.consoleDir)),
    { ...options.listen, logExtra: options.logExtra, requests: options.requests }
  ).pipe(
    // Below the server: it closes after the server has finished its requests in flight.
    Layer.provideMerge(FastPath.layer),
    // The public guards (the rate limit) for both the fast path and the handlers.
    Layer.provideMerge(layerClientRateLimit)
  )
