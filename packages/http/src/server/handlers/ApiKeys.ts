/** Handlers of the `api-keys` group (placeholder until its routes land). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.js"

export const ApiKeysHandlers = HttpApiBuilder.group(Api, "api-keys", (handlers) => Effect.succeed(handlers))
