/**
 * The `webhooks` routes of the lm/v1 API (CONTRACT §11): register (the only time the secret is shown), list, get,
 * change, delete and ping webhooks, read a webhook's delivery log and redeliver. Management routes: HTTP Basic
 * API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { NoFields } from "./Licenses.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { DeliveryWire, ListMeta, PageQuery, positiveIntFromString, ShortText, WebhookWire } from "../wire/Wire.js"

const idParam = { id: positiveIntFromString("The webhook's id (a positive integer).") }

const webhookFields = {
  name: ShortText.annotate({ description: "A name for people (default empty, at most 255 characters)." }),
  url: Schema.String.annotate({
    description: "Where deliveries are POSTed: `https` (or `http` with `LM_WEBHOOK_ALLOW_INSECURE`); loopback, private, " +
      "link-local, unspecified and other special-purpose addresses (also as an IPv6 address carrying one: mapped, " +
      "NAT64, 6to4) are refused unless `LM_WEBHOOK_ALLOW_PRIVATE` (400 naming `url`), and " +
      "every delivery checks the address it actually connects to."
  }),
  events: Schema.Array(Schema.String).annotate({
    description: `Event names, or \`["*"]\` for all: ${Model.webhookEventTypes.join(", ")}. An unknown name is 400.`
  })
}

/** POST /webhooks body: `url` and `events` required. */
export const CreateWebhookBody = Schema.Struct({ name: Schema.optionalKey(webhookFields.name), url: webhookFields.url, events: webhookFields.events })

/** PUT /webhooks/{id} body: any of name, url, events, status. */
export const UpdateWebhookBody = Schema.Struct({
  name: Schema.optionalKey(webhookFields.name),
  url: Schema.optionalKey(webhookFields.url),
  events: Schema.optionalKey(webhookFields.events),
  status: Schema.optionalKey(Model.WebhookStatus.annotate({ description: "`active` re-enables a disabled webhook." }))
})

/** A new webhook with its signing secret. */
export const CreatedWebhookWire = Schema.Struct({
  ...WebhookWire.fields,
  secret: Schema.String.annotate({
    description: "The HMAC-SHA256 key of `X-LM-Signature` (its UTF-8 bytes). Shown only in this response; stored " +
      "encrypted with the master key."
  })
})

/** What a ping came to. */
export const PingWire = Schema.Struct({
  delivered: Schema.Boolean,
  response_status: Schema.NullOr(Schema.Int),
  duration_ms: Schema.Int,
  error: Schema.NullOr(Schema.String)
})

/** The webhook routes. */
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("list", "/webhooks", {
      query: PageQuery,
      success: Success(Schema.Struct({ webhooks: Schema.Array(WebhookWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({ summary: "List webhooks", description: "Oldest first, without secrets. Paging as for every list." })),
    HttpApiEndpoint.post("create", "/webhooks", {
      payload: CreateWebhookBody,
      success: Success(CreatedWebhookWire).pipe(HttpApiSchema.status(201))
    }).annotateMerge(OpenApi.annotations({
      summary: "Register a webhook",
      description: "201 with the webhook and its `secret` (shown only here). Every event it subscribes to is POSTed " +
        "as `{id, type, created_at, data}` with `X-LM-Event`, `X-LM-Delivery` and `X-LM-Signature: t=<unix>,v1=<hex " +
        "HMAC-SHA256(secret, \"<t>.<raw body>\")>`; a 2xx delivers, anything else is retried on " +
        "`LM_WEBHOOK_RETRY_SCHEDULE` (default 30 s, 2 min, 10 min, 1 h, 6 h, 24 h), then `failed`."
    })),
    HttpApiEndpoint.get("get", "/webhooks/:id", {
      params: idParam,
      success: Success(WebhookWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a webhook", description: "Unknown id: 404 `webhook_not_found`." })),
    HttpApiEndpoint.put("update", "/webhooks/:id", {
      params: idParam,
      payload: UpdateWebhookBody,
      success: Success(WebhookWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Change a webhook",
      description: "Only the fields sent change. A `disabled` webhook receives nothing: events are not queued for it " +
        "while it is disabled, and deliveries queued before wait. `status: active` re-enables it (also one disabled " +
        "after a day of failed deliveries); the waiting deliveries then go out."
    })),
    HttpApiEndpoint.delete("delete", "/webhooks/:id", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a webhook", description: "Its deliveries go with it." })),
    HttpApiEndpoint.post("ping", "/webhooks/:id/ping", {
      params: idParam,
      payload: NoFields,
      success: Success(PingWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Ping a webhook",
      description: "POSTs a signed `webhook.ping` (body `id` 0) now, disabled or not, and answers how it went; " +
        "nothing is queued or retried."
    })),
    HttpApiEndpoint.get("deliveries", "/webhooks/:id/deliveries", {
      params: idParam,
      query: PageQuery,
      success: Success(Schema.Struct({ deliveries: Schema.Array(DeliveryWire) }), ListMeta),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "A webhook's delivery log",
      description: "Newest first: status, attempts, the last response's status and first 1 KiB (or why the attempt " +
        "failed without one), and the next attempt. Paging as for every list."
    })),
    HttpApiEndpoint.post("redeliver", "/webhooks/:id/deliveries/:delivery_id/redeliver", {
      params: { ...idParam, delivery_id: positiveIntFromString("The delivery's id (a positive integer).") },
      payload: NoFields,
      success: Success(DeliveryWire).pipe(HttpApiSchema.status(202)),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Redeliver",
      description: "Queues one more attempt now (202 with the delivery, `pending`). Unknown webhook or delivery: 404 " +
        "`webhook_not_found`."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Webhooks", description: "Signed event deliveries (API key required)." }))
{}
