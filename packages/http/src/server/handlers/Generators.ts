/** Handlers of the `generators` group (placeholder until its routes land). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.js"

export const GeneratorsHandlers = HttpApiBuilder.group(Api, "generators", (handlers) => Effect.succeed(handlers))
