/** `lm serve` with `LM_WORKERS` above 1: the settings the primary reads, and the primary (`../Cluster.ts`). */
import { Effect } from "effect"
import { runPrimary } from "../Cluster.js"
import { layerObservabilityFromEnv, refusingStart } from "../Main.js"
import { type MetricsListen, metricsListenFromEnv } from "../settings/Metrics.js"
import { workersFromEnv } from "../settings/Workers.js"
import { storeChoiceFromEnv } from "../Store.js"

/** `LM_WORKERS` and the metrics listener when it is above 1; undefined for one process; a bad value refuses the start. */
export const workersOrRefusal = refusingStart(Effect.gen(function*() {
  const choice = yield* storeChoiceFromEnv
  const count = yield* workersFromEnv(choice._tag)
  if (count === 1) return undefined
  return { count, metrics: yield* metricsListenFromEnv }
}))

/** The primary of `count` workers until SIGTERM, with the operator's logs; a worker's refused start is the primary's. */
export const launchPrimary = (count: number, metrics: MetricsListen | undefined) =>
  refusingStart(runPrimary(count, metrics)).pipe(Effect.provide(layerObservabilityFromEnv))
