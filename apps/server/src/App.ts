/**
 * The composition root of the bundled server: the domain's engine (`Engine.layer`) on a store (`Store.ts`), the
 * lm/v1 API served on it (`@lm/http`) with the browser console beside it, the bootstrap key, the artifact store,
 * the webhook sender and, with `LM_METRICS_PORT`, the metrics listener (`MetricsListener.ts`). The store
 * opens (and migrates) before the port listens; on SIGTERM the server stops accepting, finishes requests in
 * flight, flushes the event log and closes the store, in that order (`Shutdown.ts`).
 */
import cluster from "node:cluster"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer, type Redacted } from "effect"
// `Ports` and `Services` name the engine's services in the declarations of the layers below.
import { Engine, type Ports, type Services } from "@lm/domain"
import { layerApiServer, layerRequestObservers, type Listen, makeRequestMetrics, type RequestCounter } from "@lm/http"
import { artifactStoreLayer } from "./ArtifactStore.js"
import { bootstrapKeyLayer } from "./BootstrapKey.js"
import { makeAccessLog } from "./Logging.js"
import { type Draining, layerDrainingMark, layerMetricsListener, layerProbesOverIpc } from "./MetricsListener.js"
import { layerRedisRateLimits } from "./RedisRateLimits.js"
import { consoleDirFromEnv } from "./settings/Console.js"
import { logSettingsFromEnv } from "./settings/Logging.js"
import { metricsListenFromEnv } from "./settings/Metrics.js"
import { otlpSettingsFromEnv } from "./settings/Tracing.js"
import { closingWithin, engineCloseTimeoutMillis } from "./Shutdown.js"
import { describeStore, type StoreChoice, storeLayer, storeName } from "./Store.js"
import * as WebhookSender from "./WebhookSender.js"

/**
 * The whole server on a store choice, listening on `listen`. Rate limits are shared through the Redis of
 * `redisUrl` (`LM_REDIS_URL`) when given, else through the store when it is PostgreSQL.
 */
export const serverLayer = (
  choice: StoreChoice,
  listen: Listen,
  options: Engine.Options = {},
  redisUrl: Redacted.Redacted | undefined = undefined
) =>
  serverLayerOn(
    // Merged after the store: the Redis buckets replace PostgreSQL's.
    redisUrl === undefined ? storeLayer(choice) : Layer.merge(storeLayer(choice), layerRedisRateLimits(redisUrl)),
    { storage: storeName(choice), description: describeStore(choice) },
    listen,
    options
  )

/**
 * The whole server on any store layer (tests use throw-away stores). Webhooks are delivered with the undici
 * sender unless `options.webhooks.sender` gives another one; `sender` tunes the undici one. The console is served
 * as `LM_CONSOLE` and `LM_CONSOLE_DIR` say; one that is not built is logged once at start (info: the API works
 * without it). Needs `HttpSettings` (and takes `ArtifactSettings` when given).
 */
export const serverLayerOn = <E, R>(
  store: Layer.Layer<Engine.StorePorts, E, R>,
  names: { readonly storage: string; readonly description: string },
  listen: Listen,
  options: Engine.Options = {},
  sender: Partial<WebhookSender.WebhookSenderOptions> = {}
) =>
  Layer.unwrap(Effect.gen(function*() {
    const engineOptions = options.webhooks?.sender === undefined ? yield* WebhookSender.withSender(options, sender) : options
    const consoleDir = yield* consoleDirFromEnv
    if (consoleDir !== undefined && !fs.existsSync(path.join(consoleDir, "index.html"))) {
      yield* Effect.logInfo(`The console is not built (no ${path.join(consoleDir, "index.html")}): run npm run build; /console/ answers 404 until then.`)
    }
    // Batched background jobs yield to the requests this server receives (`RequestLoad`).
    const requests: RequestCounter = { started: 0 }
    const withLoad: Engine.Options = { requestsStarted: () => requests.started, ...engineOptions }
    const api = layerApiServer({ storage: names.storage, listen, logExtra: `store: ${names.description}`, requests, consoleDir })
    const metrics = yield* metricsListenFromEnv
    const { accessLog } = yield* logSettingsFromEnv()
    const exported = (yield* otlpSettingsFromEnv) !== undefined
    // Both transports report each request to the observers: per-request metrics when they are read (by the
    // metrics listener or the OTLP exporter), the access log with `LM_ACCESS_LOG`.
    const observed = api.pipe(Layer.provide(layerRequestObservers([
      ...(metrics === undefined && !exported ? [] : [makeRequestMetrics]),
      ...(accessLog ? [makeAccessLog] : [])
    ])))
    // The metrics listener opens before the API's and closes after it; the drain mark, built last, closes first:
    // `/health/ready` is 503 while the API drains. A worker of `LM_WORKERS` (`Cluster.ts`) has no listener of its
    // own: it answers the primary's, which holds the port, over the IPC channel.
    const draining: Draining = { draining: false }
    const served = metrics === undefined ? observed : layerDrainingMark(draining).pipe(
      Layer.provideMerge(observed),
      Layer.provideMerge(cluster.isWorker ? layerProbesOverIpc(draining) : layerMetricsListener(metrics, draining))
    )
    return served.pipe(
      Layer.provideMerge(bootstrapKeyLayer),
      Layer.provideMerge(artifactStoreLayer),
      Layer.provideMerge(closingWithin(Engine.layer(store, withLoad), engineCloseTimeoutMillis))
    )
  }))
