/**
 * The per-request metrics of CONTRACT §18, as an observer of both transports (`layerRequestObservers`):
 * `lm_http_requests_total{route,method,status}` and `lm_http_request_duration_seconds{route}` (the series are the
 * domain's, `Metrics`). Routes are templates (`/api/lm/v1/licenses/:id`, `unmatched` for no route), never paths.
 */
import { Effect } from "effect"
import { Metrics } from "@lm/domain"
import type { AnsweredRequest } from "./RequestSteps.js"

/** The observer counting each answered request, in the metric registry of the context it is made in. */
export const makeRequestMetrics: Effect.Effect<(request: AnsweredRequest) => void> = Effect.map(
  Effect.context<never>(),
  (context) => (request) => {
    Metrics.httpRequests({ route: request.route, method: request.method, status: String(request.status) }).updateUnsafe(1, context)
    Metrics.httpRequestDuration({ route: request.route }).updateUnsafe(request.durationMillis / 1000, context)
  }
)
