/**
 * The billing providers' webhook signing secrets (CONTRACT §20), from the environment: each provider is on only
 * when its secret is set.
 */
import { Config, Effect } from "effect"
import { Model } from "@lm/domain"
import type { Settings } from "@lm/http"

/** The setting that holds each provider's signing secret. */
export const billingSecretSettings: Readonly<Record<Model.BillingProvider, string>> = {
  stripe: "LM_STRIPE_WEBHOOK_SECRET",
  paddle: "LM_PADDLE_WEBHOOK_SECRET",
  lemonsqueezy: "LM_LEMONSQUEEZY_WEBHOOK_SECRET"
}

/**
 * The secret of each provider whose setting is set (Stripe's `whsec_…`, Paddle's notification secret key
 * `pdl_ntfset_…`, the signing secret of the Lemon Squeezy webhook); an empty one is unset.
 */
export const billingSecretsFromEnv: Effect.Effect<Settings["billingSecrets"], Config.ConfigError> = Effect.gen(function*() {
  const secrets: Partial<Record<Model.BillingProvider, string>> = {}
  for (const provider of Model.billingProviders) {
    const secret = (yield* Config.String(billingSecretSettings[provider]).pipe(Config.withDefault(""))).trim()
    if (secret !== "") secrets[provider] = secret
  }
  return secrets
})
