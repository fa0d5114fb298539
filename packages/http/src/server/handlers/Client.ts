/** Handlers of the `client` group (placeholder until its routes land). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.js"

export const ClientHandlers = HttpApiBuilder.group(Api, "client", (handlers) => Effect.succeed(handlers))
