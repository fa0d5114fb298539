/** `LM_PAYMENT_GRACE_DAYS` and `LM_SUBSCRIPTION_JOB_INTERVAL` reach the engine's options (README settings). */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { engineOptionsFromEnv } from "../src/settings/Engine.js"

describe("LM_PAYMENT_GRACE_DAYS", () => {
  it("sets the grace days (fractions allowed) and the job interval; unset, the engine's defaults apply", () => {
    const read = (env: Record<string, string>) =>
      Effect.runSync(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
    const set = read({ LM_PAYMENT_GRACE_DAYS: "0.5", LM_SUBSCRIPTION_JOB_INTERVAL: "5" })
    expect([set.paymentGraceDays, set.subscriptionJobIntervalSeconds]).toEqual([0.5, 5])
    const unset = read({})
    expect([unset.paymentGraceDays, unset.subscriptionJobIntervalSeconds]).toEqual([undefined, undefined])
  })
})
