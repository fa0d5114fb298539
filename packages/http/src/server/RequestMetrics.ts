/**
 * The per-request metrics of CONTRACT §18, as an observer of both transports (`layerRequestObservers`):
 * `lm_http_requests_total{route,method,status}` and `lm_http_request_duration_seconds{route}` (the series are the
 * domain's, `Metrics`). Routes are templates (`/api/lm/v1/licenses/:id`, `unmatched` for no route), never paths.
 */
import { Context, Effect, Metric } from "effect"
import { Metrics } from "@lm/domain"
import type { AnsweredRequest } from "./RequestSteps.js"

/**
 * How a series of `metric` in the registry of `context` is updated: straight through the registry's hooks of the
 * series, found once. (`updateUnsafe` finds them on every call: two context reads and a registry read, about a
 * microsecond per request in a profile of validate.) The series is made at zero when the registry lacks it; when
 * it was there already, each update goes through `updateUnsafe`.
 */
const seriesUpdater = <I, S>(metric: Metric.Metric<I, S>, context: Context.Context<never>): (input: I) => void => {
  const registry = Context.get(context, Metric.MetricRegistry)
  const before = new Set(registry.values())
  metric.valueUnsafe(context)
  for (const series of registry.values()) {
    if (!before.has(series)) return (input) => series.hooks.update(input, context)
  }
  return (input) => metric.updateUnsafe(input, context)
}

/** One route's series, resolved on its first request and kept: its duration, its counts by method then status. */
interface RouteSeries {
  readonly duration: (seconds: number) => void
  readonly counts: Map<string, Map<number, (n: number) => void>>
}

/**
 * The observer counting each answered request, in the metric registry of the context it is made in. A request
 * costs a few map lookups and two updates of the series' own state: no label object, key string, registry lookup
 * or effect is made once its route, method and status have been seen (the templates, methods and statuses are few).
 */
export const makeRequestMetrics: Effect.Effect<(request: AnsweredRequest) => void> = Effect.map(
  Effect.context<never>(),
  (context) => {
    const routes = new Map<string, RouteSeries>()
    const seriesOf = (route: string): RouteSeries => {
      let series = routes.get(route)
      if (series === undefined) {
        series = { duration: seriesUpdater(Metrics.httpRequestDuration({ route }), context), counts: new Map() }
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
        counter = seriesUpdater(Metrics.httpRequests({ route, method, status: String(status) }), context)
        byStatus.set(status, counter)
      }
      return counter
    }
    return (request) => {
      const series = seriesOf(request.route)
      counterOf(series, request.route, request.method, request.status)(1)
      series.duration(request.durationMillis / 1000)
    }
  }
)
