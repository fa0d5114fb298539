/**
 * Handlers of the billing groups (CONTRACT §20). `receive` takes a provider's webhook delivery: off (404
 * `rest_no_route`) unless the provider's secret is set; the signature checked on the raw body
 * (`billing/Signatures.ts`: 400 `billing_signature_invalid`, nothing changed); the event normalised by the
 * provider's mapping table (`billing/ProviderEvents.ts`); then one call of the domain's `BillingEvents`, whose
 * outcome is answered 200 whatever it is, so that the provider stops retrying. `events` lists what was received.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { BillingEvents, Model } from "@lm/domain"
import { Api, ok } from "@lm/api"
import { billingEventToWire, listMeta, pageRequest } from "@lm/api/wire"
import { normalise } from "../billing/ProviderEvents.js"
import { preload, verify } from "../billing/Signatures.js"
import { errorResponse } from "../server/Responses.js"
import { noRoute } from "../server/Routing.js"
import { HttpSettings } from "../server/Settings.js"
import { group } from "./Group.js"

const isProvider = (name: string): name is Model.BillingProvider => (Model.billingProviders as ReadonlyArray<string>).includes(name)

export const BillingProvidersHandlers = group(Api, "billingProviders", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* BillingEvents
    const settings = yield* HttpSettings
    for (const provider of Model.billingProviders) {
      if (settings.billingSecrets[provider] !== undefined) yield* preload(provider)
    }
    return handlers.handleRaw("receive", ({ params, request }) =>
      Effect.gen(function*() {
        const provider = params.provider
        const secret = isProvider(provider) ? settings.billingSecrets[provider] : undefined
        if (!isProvider(provider) || secret === undefined) return noRoute()
        const raw = yield* Effect.orElseSucceed(request.text, () => "")
        const body = yield* verify[provider](raw, request.headers, secret)
        const event = yield* normalise[provider](body, raw)
        const received = yield* billing.receive(event)
        return HttpServerResponse.jsonUnsafe(ok({ received: true as const, outcome: received.outcome, subscription_id: received.subscriptionId }))
      }).pipe(Effect.catch((error) => Effect.succeed(errorResponse(error)))))
  }))

export const BillingHandlers = group(Api, "billing", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* BillingEvents
    return handlers.handle("events", ({ query }) => {
      const page = pageRequest(query)
      return billing.list({ ...page, outcome: query.outcome, provider: query.provider }).pipe(
        Effect.map((result) => ok({ events: result.items.map(billingEventToWire) }, listMeta(result.total, page.page, page.perPage)))
      )
    })
  }))
