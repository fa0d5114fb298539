/**
 * The service's metrics (CONTRACT §18), each series defined here once, as effect `Metric`s: the HTTP transports,
 * the domain's services and its background jobs update them; the server's metrics listener exports them
 * (`/metrics`, Prometheus text, and OTLP when configured). Names and labels are the contract's.
 *
 * A labelled series is one `Metric` per set of label values, made on first use and kept ({@link labelled}): an
 * update then costs a map lookup, not a new metric. Every label takes few values (route templates, codes,
 * statuses), never a key, an id or an address.
 */
import { Effect, Metric } from "effect"

/** One metric per value of its labels, made once and kept. */
const labelled = <L extends string, M>(names: ReadonlyArray<L>, make: (labels: Readonly<Record<L, string>>) => M) => {
  const made = new Map<string, M>()
  return (labels: Readonly<Record<L, string>>): M => {
    const key = names.length === 1 ? labels[names[0]!] : names.map((name) => labels[name]).join("\u0000")
    let metric = made.get(key)
    if (metric === undefined) {
      metric = make(labels)
      made.set(key, metric)
    }
    return metric
  }
}

const counter = <L extends string>(name: string, description: string, names: ReadonlyArray<L>) =>
  labelled(names, (attributes) => Metric.counter(name, { description, attributes, incremental: true }))

/** `lm_http_requests_total{route,method,status}`: every answered request, on both transports. */
export const httpRequests = counter("lm_http_requests_total", "Requests answered, by route template, method and status", [
  "route",
  "method",
  "status"
])

/** Bucket bounds of request durations, in seconds: 1 ms to about 16 s. */
export const durationBoundaries = Metric.exponentialBoundaries({ start: 0.001, factor: 2, count: 15 })

/** `lm_http_request_duration_seconds{route}`: time from taking a request to its answer being ready. */
export const httpRequestDuration = labelled(
  ["route"],
  (attributes) =>
    Metric.histogram("lm_http_request_duration_seconds", {
      description: "Time to answer a request, by route template",
      attributes,
      boundaries: durationBoundaries
    })
)

/** `lm_validations_total{code}`: validations by their answer's code (`valid`, `expired`, ... or the refusal's code). */
export const validations = counter("lm_validations_total", "Validations, by the code of their answer", ["code"])

/** `lm_seat_changes_total{kind,result}`: activations, deactivations and heartbeats by outcome. */
export const seatChanges = counter("lm_seat_changes_total", "Seat changes (activate, deactivate, heartbeat), by outcome", [
  "kind",
  "result"
])

/** `lm_webhook_deliveries_total{result}`: delivery attempts, `delivered` or `failed`. */
export const webhookDeliveries = counter("lm_webhook_deliveries_total", "Webhook delivery attempts, by result", ["result"])

/** `lm_webhook_backlog`: deliveries waiting for an attempt (pending), as of the delivery job's last round. */
export const webhookBacklog = Metric.gauge("lm_webhook_backlog", { description: "Webhook deliveries pending" })

/** `lm_event_log_buffered`: event log entries not yet written to the store. */
export const eventLogBuffered = Metric.gauge("lm_event_log_buffered", {
  description: "Event log entries buffered, not yet written to the store"
})

/** `lm_event_log_dropped_total`: event log entries dropped (the oldest) because the buffer was full. */
export const eventLogDropped = Metric.counter("lm_event_log_dropped_total", {
  description: "Event log entries dropped because the buffer was full while the store could not take them",
  incremental: true
})

/** `lm_rate_limited_total{limit}`: requests refused by a rate limit (`ip`, `key`, `api_key`, `auth_failures`). */
export const rateLimited = counter("lm_rate_limited_total", "Requests refused by a rate limit, by limit", ["limit"])

/** `lm_subscription_moves_total{to}`: subscription status changes, by the status moved to. */
export const subscriptionMoves = counter("lm_subscription_moves_total", "Subscription status changes, by new status", ["to"])

/** `lm_store_unavailable_total`: store calls that failed because the store could not serve. */
export const storeUnavailable = Metric.counter("lm_store_unavailable_total", {
  description: "Store calls answered as unavailable",
  incremental: true
})

/** `lm_process_resident_memory_bytes`: the process's resident set size, as of the last scrape. */
export const processResidentMemory = Metric.gauge("lm_process_resident_memory_bytes", {
  description: "Resident memory of the process"
})

/** `lm_process_heap_used_bytes`: the JavaScript heap in use, as of the last scrape. */
export const processHeapUsed = Metric.gauge("lm_process_heap_used_bytes", { description: "JavaScript heap in use" })

/** `lm_event_loop_delay_seconds{quantile}`: event-loop delay since the previous scrape (`0.5`, `0.99`, `max`). */
export const eventLoopDelay = labelled(
  ["quantile"],
  (attributes) =>
    Metric.gauge("lm_event_loop_delay_seconds", {
      description: "Event-loop delay since the previous scrape, by quantile",
      attributes
    })
)

/** Adds one to a counter. */
export const increment = (metric: Metric.Counter<number>): Effect.Effect<void> => Metric.update(metric, 1)
