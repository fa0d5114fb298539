/**
 * Handlers of the `api-keys` group: each calls one method of the domain's `ApiKeys` service as the key that
 * authenticated the request (the domain refuses keys that may not manage keys) and writes the result with
 * `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { ApiKeys, Services } from "@lm/domain"
import { Api, CurrentApiKey, ok } from "@lm/api"
import { apiKeyToWire, iso, listMeta, pageRequest } from "@lm/api/wire"
import { group } from "./Group.js"

/** The `api-keys` handlers, on the domain's `ApiKeys` service. */
export const ApiKeysHandlers = group(Api, "api-keys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    /** The authenticated key as the domain's actor. */
    const actor = Effect.map(CurrentApiKey, (key) => Services.ApiKeyActor.key(key.scope))
    return handlers.handleAll({
      create: ({ payload }) =>
        actor.pipe(
          Effect.flatMap((actor) => apiKeys.create(actor, { description: payload.description ?? "", scope: payload.scope })),
          Effect.map(({ apiKey, consumerKey, consumerSecret }) =>
            ok({
              id: apiKey.id,
              description: apiKey.description,
              scope: apiKey.scope,
              consumer_key: consumerKey,
              consumer_secret: consumerSecret,
              truncated_key: apiKey.truncatedKey,
              created_at: iso(apiKey.createdAt)
            })
          )
        ),
      list: ({ query }) => {
        const page = pageRequest(query)
        return actor.pipe(
          Effect.flatMap((actor) => apiKeys.list(actor, page)),
          Effect.map((result) => ok({ api_keys: result.items.map(apiKeyToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      },
      delete: ({ params }) =>
        actor.pipe(
          Effect.flatMap((actor) => apiKeys.delete(actor, params.id)),
          Effect.as(ok({ deleted: true as const, id: params.id }))
        )
    })
  }))
