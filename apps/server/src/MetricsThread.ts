/**
 * The metrics listener of a lone server, on a worker thread of its own (`MetricsListener.ts` starts it): it holds
 * the listener and asks the main thread, which owns the metric registry and the store, for each probe. Scrapes and
 * health checks then never run Node's HTTP code on the thread that answers the API: a second kind of request there
 * made V8 recompile that code for two shapes of request and socket, about 2–3 % of a validate's CPU
 * (bench/README.md, "Metrics on and off").
 *
 * Messages to the main thread: `{ lm: "listening", address }` once it listens, `{ lm: "refused", code }` when it
 * cannot, then probe requests; from it, probe answers.
 */
import { parentPort, workerData } from "node:worker_threads"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { ask, channelOver, layerProbeServer, type Probes, statusOf, unresponsive } from "./ProbeListener.js"
import type { MetricsListen } from "./settings/Metrics.js"

export type ThreadReport =
  | { readonly lm: "listening"; readonly address: string }
  | { readonly lm: "refused"; readonly code: string }

const port = parentPort!
const channel = channelOver(port, (message) => port.postMessage(message))
const report = (message: ThreadReport) => port.postMessage(message)

const probes: Probes = {
  metrics: Effect.map(ask(channel, "metrics"), (answer) =>
    answer !== undefined && "metrics" in answer ? answer.metrics : undefined),
  live: Effect.map(ask(channel, "live"), (answer) => statusOf(answer, unresponsive)),
  ready: Effect.map(ask(channel, "ready"), (answer) => statusOf(answer, unresponsive))
}

const listen = workerData as MetricsListen

Effect.runFork(
  Layer.launch(
    Layer.effectDiscard(Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      report({ lm: "listening", address: HttpServer.formatAddress(server.address) })
    })).pipe(
      Layer.provide(layerProbeServer(listen, Effect.succeed(probes))),
      Layer.catchTag("ServeError", (error) =>
        Layer.effectDiscard(Effect.sync(() =>
          report({ lm: "refused", code: (error.cause as NodeJS.ErrnoException | undefined)?.code ?? String(error.cause) })
        )))
    )
  )
)
