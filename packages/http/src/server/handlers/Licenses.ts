/** Handlers of the `licenses` group (placeholder until its routes land). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.js"

export const LicensesHandlers = HttpApiBuilder.group(Api, "licenses", (handlers) => Effect.succeed(handlers))
