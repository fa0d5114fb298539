/**
 * The second listener of CONTRACT §18 (`LM_METRICS_PORT`): `GET /metrics` in Prometheus text (effect's
 * `PrometheusMetrics` exporter over the metric registry; the series are the domain's `Metrics`), `GET /health/live`
 * (200 while the process answers) and `GET /health/ready` (200 when the store answers and the server is not
 * draining, else 503). Each scrape refreshes the process gauges: resident memory, heap in use, and the event-loop
 * delay since the previous scrape. The routes and the probe messages are `ProbeListener.ts`.
 *
 * A lone server holds the listener on a thread of its own (`MetricsThread.ts`), which asks this thread for each
 * probe; the primary of `LM_WORKERS` holds it on its own main thread and asks each worker (`Cluster.ts`).
 *
 * It opens before the API's listener and closes after it (it answers `ready: false` while the API drains); the
 * drain is marked by {@link layerDrainingMark}, which the composition root builds after the API's listener.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Worker } from "node:worker_threads"
import { Effect, Layer, Metric } from "effect"
import { HttpServer } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { Metrics, Ports } from "@lm/domain"
import { InvalidSetting } from "@lm/http"
import type { ThreadReport } from "./MetricsThread.js"
import { alive, answerProbes, channelOver, layerProbeServer, type Probes } from "./ProbeListener.js"
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
      live: Effect.succeed(alive),
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

/** The start refused: the metrics listener cannot listen on `listen` (`code`, e.g. EADDRINUSE). */
const cannotListen = (listen: MetricsListen, code: string) =>
  new InvalidSetting({
    name: "LM_METRICS_PORT",
    message: `LM_METRICS_PORT, HOST: cannot listen on ${listen.host}:${listen.port} (${code})`
  })

const listeningLine = (address: string) => Effect.logInfo(`Metrics on ${address}/metrics`)

/**
 * A metrics listener on `listen` answering with `probes`, on this thread (the primary of `LM_WORKERS`, which
 * serves no API request); logs its address once listening.
 */
export const layerListener = <R>(listen: MetricsListen, probes: Effect.Effect<Probes, never, R>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    yield* listeningLine(HttpServer.formatAddress(server.address))
  })).pipe(
    Layer.provide(layerProbeServer(listen, probes)),
    Layer.catchTag("ServeError", (error) =>
      Layer.effectDiscard(Effect.fail(cannotListen(listen, (error.cause as NodeJS.ErrnoException | undefined)?.code ?? String(error.cause))))
    )
  )

/**
 * The metrics listener of a lone server process on `listen`, with the engine's store: held by a thread of its own
 * (`MetricsThread.ts`), whose probes this thread answers. Opens once the thread listens; stops the thread when
 * the scope closes.
 */
export const layerMetricsListener = (listen: MetricsListen, state: Draining) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const probes = yield* makeProbes(state)
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    const worker = yield* Effect.acquireRelease(
      Effect.sync(() => new Worker(new URL("./MetricsThread.js", import.meta.url), { workerData: listen })),
      (worker) => Effect.promise(() => worker.terminate())
    )
    const stopAnswering = answerProbes(channelOver(worker, (message) => worker.postMessage(message)), probes, run)
    yield* Effect.addFinalizer(() => Effect.sync(stopAnswering))
    const started = yield* Effect.callback<ThreadReport | Error>((resume) => {
      const done = (report: ThreadReport | Error) => {
        worker.off("message", onMessage)
        worker.off("error", done)
        worker.off("exit", onExit)
        resume(Effect.succeed(report))
      }
      const onMessage = (message: ThreadReport) => {
        if (message?.lm === "listening" || message?.lm === "refused") done(message)
      }
      const onExit = (code: number) => done(new Error(`the metrics thread exited (${code}) before listening`))
      worker.on("message", onMessage)
      worker.once("error", done)
      worker.once("exit", onExit)
    })
    if (started instanceof Error) return yield* Effect.die(started)
    if (started.lm === "refused") return yield* cannotListen(listen, started.code)
    yield* listeningLine(started.address)
  }))

/** A cluster worker's probes, answered over the IPC channel to the primary instead of a listener of its own. */
export const layerProbesOverIpc = (state: Draining) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const probes = yield* makeProbes(state)
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    const stopAnswering = answerProbes(processChannel, probes, run)
    yield* Effect.addFinalizer(() => Effect.sync(stopAnswering))
  }))

/** A cluster worker's IPC channel to its primary. */
const processChannel = channelOver(process, (message) => {
  if (process.connected) process.send?.(message)
})
