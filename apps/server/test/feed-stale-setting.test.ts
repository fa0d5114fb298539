/**
 * `LM_FEED_STALE_MS` (README settings): how long the change feed may be silent before validations stop being
 * served from the cache. Default 2000; below two heartbeats (1000) the server refuses to start.
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { engineOptionsFromEnv } from "../src/settings/Engine.js"

const read = (env: Record<string, string>) =>
  Effect.runSyncExit(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

describe("LM_FEED_STALE_MS", () => {
  it("defaults to 2000 ms and is read from the environment", () => {
    const unset = read({})
    const set = read({ LM_FEED_STALE_MS: "5000" })
    expect(Exit.isSuccess(unset) && unset.value.validationCache.feedStaleMillis).toBe(2000)
    expect(Exit.isSuccess(set) && set.value.validationCache.feedStaleMillis).toBe(5000)
  })

  it("refuses a bound shorter than two heartbeats, naming the setting", () => {
    const exit = read({ LM_FEED_STALE_MS: "500" })
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(Exit.isFailure(exit) && exit.cause)).toMatch(/LM_FEED_STALE_MS: expected at least 1000/)
  })
})
