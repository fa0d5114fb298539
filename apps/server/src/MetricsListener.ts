/**
 * The second listener of CONTRACT §18 (`LM_METRICS_PORT`): `GET /metrics` in Prometheus text (effect's
 * `PrometheusMetrics` exporter over the metric registry; the series are the domain's `Metrics`), `GET /health/live`
 * (200 while the process runs) and `GET /health/ready` (200 when the store answers and the server is not draining,
 * else 503). Each scrape refreshes the process gauges: resident memory, heap in use, and the event-loop delay since
 * the previous scrape.
 *
 * It opens before the API's listener and closes after it (it answers `ready: false` while the API drains); the
 * drain is marked by {@link layerDrainingMark}, which the composition root builds after the API's listener.
 */
import { createServer } from "node:http"
import { monitorEventLoopDelay } from "node:perf_hooks"
// The module itself, not the package index: that loads every module, NodeRedis (and node-redis) among them.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Metric } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { Metrics, Ports } from "@lm/domain"
import { InvalidSetting } from "@lm/http"
import type { MetricsListen } from "./settings/Metrics.js"

/** Whether the server is draining (SIGTERM): shared by the drain mark and the readiness route. */
export interface Draining {
  draining: boolean
}

/** Marks the drain when it closes: build it after (above) the API's listener, so that it closes first. */
export const layerDrainingMark = (state: Draining) =>
  Layer.effectDiscard(Effect.addFinalizer(() => Effect.sync(() => {
    state.draining = true
  })))

/** How long the store may take to answer the readiness check. */
export const readinessTimeoutMillis = 2000

const json = (status: number, body: object) => HttpServerResponse.jsonUnsafe(body, { status })

/**
 * How often the event-loop delay is sampled, in milliseconds. Node's default, 10, cost a validate ~6 % of the
 * server's CPU per response under load (bench/README.md, "Metrics on and off"); at 100 that cost is gone, and a
 * stall still shows in full in the sample that spans it (10 samples a second, 150 per 15 s scrape).
 */
const delayResolutionMillis = 100

/** The process gauges, refreshed at each scrape. */
const processGauges = (delay: ReturnType<typeof monitorEventLoopDelay>) =>
  Effect.gen(function*() {
    const memory = process.memoryUsage()
    yield* Metric.update(Metrics.processResidentMemory, memory.rss)
    yield* Metric.update(Metrics.processHeapUsed, memory.heapUsed)
    // Node's samples are the whole interval between its timer's runs: the delay is what exceeds the resolution.
    // Nanoseconds to seconds, since the previous scrape (NaN before any sample: 0).
    const seconds = (ns: number) => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - delayResolutionMillis) / 1e3 : 0)
    yield* Metric.update(Metrics.eventLoopDelay({ quantile: "0.5" }), seconds(delay.percentile(50)))
    yield* Metric.update(Metrics.eventLoopDelay({ quantile: "0.99" }), seconds(delay.percentile(99)))
    yield* Metric.update(Metrics.eventLoopDelay({ quantile: "max" }), seconds(delay.max))
    delay.reset()
  })

/** What the metrics listener answers, as effects: the Prometheus text, and readiness (status and body). */
export interface Probes {
  readonly metrics: Effect.Effect<string>
  readonly ready: Effect.Effect<{ readonly status: 200 | 503; readonly body: { readonly status: string } }>
}

/**
 * The probes of this process (scoped: the event-loop delay monitor runs until the scope closes). Needs the
 * engine's store (readiness pings it).
 */
export const makeProbes = (state: Draining) =>
  Effect.gen(function*() {
    const store = yield* Ports.Store
    const delay = monitorEventLoopDelay({ resolution: delayResolutionMillis })
    // The series without labels are listed from the start, at 0.
    yield* Metric.update(Metrics.storeUnavailable, 0)
    yield* Metric.update(Metrics.eventLogDropped, 0)
    delay.enable()
    yield* Effect.addFinalizer(() => Effect.sync(() => delay.disable()))
    const probes: Probes = {
      metrics: Effect.andThen(processGauges(delay), PrometheusMetrics.format()),
      ready: Effect.suspend(() => {
        if (state.draining) return Effect.succeed({ status: 503 as const, body: { status: "draining" } })
        return store.ping.pipe(
          Effect.timeout(readinessTimeoutMillis),
          Effect.match({
            onFailure: () => ({ status: 503 as const, body: { status: "store_unavailable" } }),
            onSuccess: () => ({ status: 200 as const, body: { status: "ready" } })
          })
        )
      })
    }
    return probes
  })

/** The Prometheus text format's content type. */
export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

/** The routes of a metrics listener on `probes`: `/metrics`, `/health/live`, `/health/ready`. */
export const layerProbeRoutes = <E, R>(probes: Effect.Effect<Probes, E, R>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const router = yield* HttpRouter.HttpRouter
    const { metrics, ready } = yield* probes
    yield* router.add("GET", "/metrics", Effect.map(metrics, (text) => HttpServerResponse.text(text, { contentType: prometheusContentType })))
    yield* router.add("GET", "/health/live", Effect.succeed(json(200, { status: "live" })))
    yield* router.add("GET", "/health/ready", Effect.map(ready, ({ body, status }) => json(status, body)))
  }))

/** A metrics listener on `listen` answering with `probes`; logs its address once listening. */
export const layerListener = <R>(listen: MetricsListen, probes: Effect.Effect<Probes, never, R>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    yield* Effect.logInfo(`Metrics on ${HttpServer.formatAddress(server.address)}/metrics`)
  })).pipe(
    Layer.provideMerge(HttpRouter.serve(layerProbeRoutes(probes), { disableLogger: true, disableListenLog: true })),
    Layer.provide(NodeHttpServer.layer(() => createServer(), { host: listen.host, port: listen.port })),
    Layer.catchTag("ServeError", (error) =>
      Layer.effectDiscard(Effect.fail(
        new InvalidSetting({
          name: "LM_METRICS_PORT",
          message: `LM_METRICS_PORT, HOST: cannot listen on ${listen.host}:${listen.port} (${
            (error.cause as NodeJS.ErrnoException | undefined)?.code ?? String(error.cause)
          })`
        })
      ))
    )
  )

/** The metrics listener of a lone server process on `listen`, with the engine's store. */
export const layerMetricsListener = (listen: MetricsListen, state: Draining) => layerListener(listen, makeProbes(state))

/**
 * A question of the cluster's primary (`Cluster.ts`) to a worker over the IPC channel, and the worker's answer:
 * under `LM_WORKERS` the primary holds the one metrics listener and asks every worker for its probes.
 */
export type ProbeRequest = { readonly lm: "probe"; readonly id: number; readonly probe: "metrics" | "ready" }
export type ProbeAnswer =
  | { readonly lm: "probe"; readonly id: number; readonly metrics: string }
  | { readonly lm: "probe"; readonly id: number; readonly ready: Effect.Success<Probes["ready"]> }

const isProbeRequest = (message: unknown): message is ProbeRequest =>
  typeof message === "object" && message !== null && (message as ProbeRequest).lm === "probe" &&
  typeof (message as ProbeRequest).id === "number"

/** A cluster worker's probes, answered over the IPC channel to the primary instead of a listener of its own. */
export const layerProbesOverIpc = (state: Draining) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const probes = yield* makeProbes(state)
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const onMessage = (message: unknown) => {
      if (!isProbeRequest(message)) return
      const answer: Promise<ProbeAnswer> = message.probe === "metrics"
        ? run(probes.metrics).then((metrics) => ({ lm: "probe", id: message.id, metrics }))
        : run(probes.ready).then((ready) => ({ lm: "probe", id: message.id, ready }))
      void answer.then((reply) => {
        if (process.connected) process.send?.(reply)
      })
    }
    process.on("message", onMessage)
    yield* Effect.addFinalizer(() => Effect.sync(() => process.off("message", onMessage)))
  }))
