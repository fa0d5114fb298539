/** `LM_EVENT_RETENTION_DAYS` takes fractions of a day (short windows for tests and benches). */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { engineOptionsFromEnv } from "../src/settings/Engine.js"

describe("LM_EVENT_RETENTION_DAYS", () => {
  it("accepts a fraction of a day", () => {
    const read = (env: Record<string, string>) =>
      Effect.runSync(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
    expect(read({ LM_EVENT_RETENTION_DAYS: "0.5" }).eventRetentionDays).toBe(0.5)
    expect(read({ LM_EVENT_RETENTION_DAYS: "0.002" }).eventRetentionDays).toBe(0.002)
    expect(read({}).eventRetentionDays).toBe(90)
  })
})
