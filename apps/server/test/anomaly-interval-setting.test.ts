/**
 * `LM_ANOMALY_INTERVAL` (README settings): seconds between background runs of the anomaly rules. Unset, the
 * engine's default (60) applies; fractions and 0 (off) are read; a negative or non-numeric value refuses the start.
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { engineOptionsFromEnv } from "../src/settings/Engine.js"

const read = (env: Record<string, string>) =>
  Effect.runSyncExit(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

const interval = (env: Record<string, string>) => {
  const exit = read(env)
  return Exit.isSuccess(exit) ? exit.value.anomalyIntervalSeconds : "refused"
}

describe("LM_ANOMALY_INTERVAL", () => {
  it("is left to the engine's default when unset, and read from the environment (fractions, 0 for off)", () => {
    expect(interval({})).toBeUndefined()
    expect(interval({ LM_ANOMALY_INTERVAL: "300" })).toBe(300)
    expect(interval({ LM_ANOMALY_INTERVAL: "0.5" })).toBe(0.5)
    expect(interval({ LM_ANOMALY_INTERVAL: "0" })).toBe(0)
  })

  it("refuses a negative or non-numeric value, naming the setting", () => {
    const exit = read({ LM_ANOMALY_INTERVAL: "-1" })
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(Exit.isFailure(exit) && exit.cause)).toMatch(/LM_ANOMALY_INTERVAL/)
    expect(interval({ LM_ANOMALY_INTERVAL: "soon" })).toBe("refused")
    expect(interval({ LM_ANOMALY_INTERVAL: "Infinity" })).toBe("refused")
  })
})
