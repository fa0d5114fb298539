/** The billing providers' secrets from the environment (CONTRACT §20): each provider on only when its secret is set. */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { billingSecretsFromEnv } from "../src/settings/Billing.js"
import { httpSettingsFromEnv } from "../src/settings/Http.js"

const read = <A, E>(effect: Effect.Effect<A, E>, env: Record<string, string>) =>
  Effect.runSync(Effect.provide(effect, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

describe("LM_STRIPE_WEBHOOK_SECRET, LM_PADDLE_WEBHOOK_SECRET, LM_LEMONSQUEEZY_WEBHOOK_SECRET", () => {
  it("turn on each provider whose secret is set; an empty one is unset", () => {
    expect(read(billingSecretsFromEnv, {})).toEqual({})
    expect(read(billingSecretsFromEnv, { LM_STRIPE_WEBHOOK_SECRET: "whsec_abc", LM_PADDLE_WEBHOOK_SECRET: "  ", LM_LEMONSQUEEZY_WEBHOOK_SECRET: "ls" }))
      .toEqual({ stripe: "whsec_abc", lemonsqueezy: "ls" })
    expect(read(httpSettingsFromEnv, { LM_PADDLE_WEBHOOK_SECRET: "pdl_ntfset_x" }).billingSecrets).toEqual({ paddle: "pdl_ntfset_x" })
  })
})
