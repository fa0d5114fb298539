/** Handlers of the `machines` group (placeholder until its routes land). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.js"

export const MachinesHandlers = HttpApiBuilder.group(Api, "machines", (handlers) => Effect.succeed(handlers))
