/**
 * The metrics listener's setting (CONTRACT §18): `LM_METRICS_PORT` opens a second listener on `HOST` with
 * `/metrics`, `/health/live` and `/health/ready`; unset (or empty) leaves it off, and then requests are not counted.
 */
import { Config, Effect } from "effect"
import { InvalidSetting } from "@lm/http"

/** Where the metrics listener listens. */
export interface MetricsListen {
  readonly host: string
  /** 0 picks a free port (the start-up line says which). */
  readonly port: number
}

/** `LM_METRICS_PORT` (0 to 65535) on `HOST`; undefined when unset. */
export const metricsListenFromEnv: Effect.Effect<MetricsListen | undefined, Config.ConfigError | InvalidSetting> = Effect.gen(
  function*() {
    const text = (yield* Config.String("LM_METRICS_PORT").pipe(Config.withDefault(""))).trim()
    if (text === "") return undefined
    const port = Number(text)
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new InvalidSetting({ name: "LM_METRICS_PORT", message: `LM_METRICS_PORT: expected 0 to 65535, got ${text}` })
    }
    const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
    return { host, port }
  }
)
