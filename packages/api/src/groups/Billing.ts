/**
 * The billing routes of the lm/v1 API (CONTRACT §20): a billing provider's webhook deliveries (public, verified
 * by the provider's signature) and the list of the events received with their outcome (API key). The receiving
 * handler takes the raw request: the signature covers the body exactly as sent.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { BadRequest, NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { BillingEventWire, ListMeta, PageQuery } from "../wire/Wire.js"

/** The answer to a provider's delivery: always 200 once the signature verifies, so the provider stops retrying. */
export const ReceivedEventWire = Schema.Struct({
  received: Schema.Literal(true),
  outcome: Model.BillingEventOutcome,
  subscription_id: Schema.NullOr(Schema.Int)
})

/** GET /billing/events query. */
export const ListBillingEventsQuery = {
  outcome: Schema.optionalKey(Model.BillingEventOutcome.annotate({ description: "Only events with this outcome." })),
  provider: Schema.optionalKey(Model.BillingProvider.annotate({ description: "Only this provider's events." })),
  ...PageQuery
}

/** `POST /billing/{provider}/events` (public: the provider's signature is the credential). */
export class BillingProvidersGroup extends HttpApiGroup.make("billingProviders")
  .add(
    HttpApiEndpoint.post("receive", "/billing/:provider/events", {
      params: { provider: Schema.String.annotate({ description: `One of ${Model.billingProviders.join(", ")}.` }) },
      payload: Schema.Record(Schema.String, Schema.Json).annotate({ description: "The provider's webhook event, as it sends it." }),
      success: Success(ReceivedEventWire),
      error: [BadRequest, NotFound]
    }).annotateMerge(OpenApi.annotations({
      summary: "Receive a billing provider's webhook event",
      description: "Register `{api_base}/billing/{provider}/events` at the provider. On only when the provider's " +
        "secret is set (`LM_STRIPE_WEBHOOK_SECRET`, `LM_PADDLE_WEBHOOK_SECRET`, `LM_LEMONSQUEEZY_WEBHOOK_SECRET`; " +
        "else 404 `rest_no_route`). The signature is checked on the raw body as the provider documents " +
        "(`Stripe-Signature` with a 300 s tolerance, `Paddle-Signature` `ts`/`h1`, `X-Signature`): a bad or stale " +
        "one is 400 `billing_signature_invalid` and changes nothing. Every verified event answers 200 with its " +
        "outcome (`applied`, `duplicate`, `stale`, `unmatched`, `ignored`)."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "Billing providers", description: "Webhook deliveries of Stripe, Paddle Billing and Lemon Squeezy." }))
{}

/** `GET /billing/events` (API key). */
export class BillingGroup extends HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("events", "/billing/events", {
      query: ListBillingEventsQuery,
      success: Success(Schema.Struct({ events: Schema.Array(BillingEventWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "Billing provider events received",
      description: "Newest first, with the outcome of each; filters `outcome` and `provider`; paging as for every list."
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Billing", description: "Events received from billing providers (API key required)." }))
{}
