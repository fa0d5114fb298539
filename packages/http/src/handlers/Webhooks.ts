/**
 * Handlers of the `webhooks` group: each calls one method of the domain's `Webhooks` service and writes the result
 * with `Wire.ts`. Domain errors map to the envelope mechanically; a secret the master key cannot open is a fault.
 */
import { Effect } from "effect"
import { Webhooks } from "@lm/domain"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { ok } from "@lm/api"
import { deliveryToWire, listMeta, pageRequest, webhookToWire } from "@lm/api/wire"

/** The `webhooks` handlers, on the domain's `Webhooks` service. */
export const WebhooksHandlers = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return webhooks.list(page).pipe(
          Effect.map((result) => ok({ webhooks: result.items.map(webhookToWire) }, listMeta(result.total, page.page, page.perPage))),
          Effect.mapError(ApiErrors.fromDomain)
        )
      },
      create: ({ payload }) =>
        webhooks.create(payload).pipe(
          Effect.map(({ secret, webhook }) => ok({ ...webhookToWire(webhook), secret })),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      get: ({ params }) => webhooks.get(params.id).pipe(Effect.map((w) => ok(webhookToWire(w))), Effect.mapError(ApiErrors.fromDomain)),
      update: ({ params, payload }) =>
        webhooks.update(params.id, payload).pipe(Effect.map((w) => ok(webhookToWire(w))), Effect.mapError(ApiErrors.fromDomain)),
      delete: ({ params }) =>
        webhooks.delete(params.id).pipe(Effect.as(ok({ deleted: true as const, id: params.id })), Effect.mapError(ApiErrors.fromDomain)),
      ping: ({ params }) =>
        webhooks.ping(params.id).pipe(
          Effect.catchTag("SealedSecretUnreadable", (error) => Effect.die(error)),
          Effect.map((result) =>
            ok({
              delivered: result.delivered,
              response_status: result.responseStatus,
              duration_ms: Math.round(result.durationMs),
              error: result.error
            })
          ),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      deliveries: ({ params, query }) => {
        const page = pageRequest(query)
        return webhooks.deliveries(params.id, page).pipe(
          Effect.map((result) => ok({ deliveries: result.items.map(deliveryToWire) }, listMeta(result.total, page.page, page.perPage))),
          Effect.mapError(ApiErrors.fromDomain)
        )
      },
      redeliver: ({ params }) =>
        webhooks.redeliver(params.id, params.delivery_id).pipe(
          Effect.map((d) => ok(deliveryToWire(d))),
          Effect.mapError(ApiErrors.fromDomain)
        )
    })
  }))
