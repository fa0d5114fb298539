/** The service's own routes: `GET {api_base}/health`. (`openapi.json` is served beside the API, not in it.) */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ServiceUnavailable } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"

/** The body of a healthy `/health`. */
export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  storage: Schema.String.annotate({ description: "The store in use, e.g. `pglite`, `postgres`, `memory`." }),
  version: Schema.String
})

/** `GET /health`: 200 with the store and version, 503 `service_unavailable` when the store is down. */
export class SystemGroup extends HttpApiGroup.make("system").add(
  HttpApiEndpoint.get("health", "/health", {
    success: Success(Health),
    error: ServiceUnavailable
  }).annotateMerge(OpenApi.annotations({
    summary: "Liveness and store reachability",
    description: "`{status: \"ok\", storage, version}` while the store answers; 503 `service_unavailable` (with `Retry-After`) when it does not. Public, not rate limited."
  }))
).annotateMerge(OpenApi.annotations({ description: "Health of the service (public)." })) {}
