/**
 * Handlers of the `webhooks` group: each calls one method of the domain's `Webhooks` service and writes the result
 * with `Wire.ts`. Domain errors map to the envelope mechanically; a secret the master key cannot open is a fault.
 */
import { Effect } from "effect"
import { Webhooks } from "@lm/domain"
import { Api, ok } from "@lm/api"
import { deliveryToWire, listMeta, pageRequest, webhookToWire } from "@lm/api/wire"
import { group } from "./Group.js"

/** The `webhooks` handlers, on the domain's `Webhooks` service. */
export const WebhooksHandlers = group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return webhooks.list(page).pipe(
          Effect.map((result) => ok({ webhooks: result.items.map(webhookToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      },
      create: ({ payload }) =>
        webhooks.create(payload).pipe(
          Effect.map(({ secret, webhook }) => ok({ ...webhookToWire(webhook), secret }))
        ),
      get: ({ params }) => webhooks.get(params.id).pipe(Effect.map((w) => ok(webhookToWire(w)))),
      update: ({ params, payload }) =>
        webhooks.update(params.id, payload).pipe(Effect.map((w) => ok(webhookToWire(w)))),
      delete: ({ params }) =>
        webhooks.delete(params.id).pipe(Effect.as(ok({ deleted: true as const, id: params.id }))),
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
          )
        ),
      deliveries: ({ params, query }) => {
        const page = pageRequest(query)
        return webhooks.deliveries(params.id, page).pipe(
          Effect.map((result) => ok({ deliveries: result.items.map(deliveryToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      },
      redeliver: ({ params }) =>
        webhooks.redeliver(params.id, params.delivery_id).pipe(
          Effect.map((d) => ok(deliveryToWire(d)))
        )
    })
  }))
