/**
 * The per-request metrics of CONTRACT §18, as an observer of both transports (`layerRequestObservers`):
 * `lm_http_requests_total{route,method,status}` and `lm_http_request_duration_seconds{route}` (the series are the
 * domain's, `Metrics`). Routes are templates (`/api/lm/v1/licenses/:id`, `unmatched` for no route), never paths.
 */
import { Effect, type Metric } from "effect"
import { Metrics } from "@lm/domain"
import type { AnsweredRequest } from "./RequestSteps.js"

/** One route's series, resolved on its first request and kept: its duration, its counts by method then status. */
interface RouteSeries {
  readonly duration: Metric.Histogram<number>
  readonly counts: Map<string, Map<number, Metric.Counter<number>>>
}

/**
 * The observer counting each answered request, in the metric registry of the context it is made in. A request
 * costs a few map lookups and two updates: no label object, key string or effect is made once its route, method
 * and status have been seen (the templates, methods and statuses are few).
 */
export const makeRequestMetrics: Effect.Effect<(request: AnsweredRequest) => void> = Effect.map(
  Effect.context<never>(),
  (context) => {
    const routes = new Map<string, RouteSeries>()
    const seriesOf = (route: string): RouteSeries => {
      let series = routes.get(route)
      if (series === undefined) {
        series = { duration: Metrics.httpRequestDuration({ route }), counts: new Map() }
        routes.set(route, series)
      }
      return series
    }
    const counterOf = (series: RouteSeries, route: string, method: string, status: number) => {
      let byStatus = series.counts.get(method)
      if (byStatus === undefined) {
        byStatus = new Map()
        series.counts.set(method, byStatus)
      }
      let counter = byStatus.get(status)
      if (counter === undefined) {
        counter = Metrics.httpRequests({ route, method, status: String(status) })
        byStatus.set(status, counter)
      }
      return counter
    }
    return (request) => {
      const series = seriesOf(request.route)
      counterOf(series, request.route, request.method, request.status).updateUnsafe(1, context)
      series.duration.updateUnsafe(request.durationMillis / 1000, context)
    }
  }
)
