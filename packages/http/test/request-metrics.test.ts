/**
 * The per-request metrics observer (`RequestMetrics.ts`): what it counts lands in the registry's series, which
 * the Prometheus exporter reads, including when the registry already held the series (a second observer in the
 * same registry, a server built again in one process).
 */
import { Effect, Metric } from "effect"
import { expect, it } from "vitest"
import { Metrics } from "@lm/domain"
import { makeRequestMetrics } from "../src/server/RequestMetrics.js"
import type { AnsweredRequest } from "../src/server/RequestSteps.js"

const answered = (route: string, method: string, status: number, durationMillis: number): AnsweredRequest => ({
  transport: "fast-path",
  method,
  path: route,
  route,
  status,
  requestId: "r",
  durationMillis,
  clientIp: () => undefined
})

const route = "/api/lm/v1/validate"

it("counts each request by route, method and status, and its duration in the route's histogram", async () => {
  const registry: Metric.MetricRegistry = new Map()
  const read = await Effect.runPromise(Effect.gen(function*() {
    const observe = yield* makeRequestMetrics
    observe(answered(route, "POST", 200, 0.4))
    observe(answered(route, "POST", 200, 3))
    observe(answered(route, "POST", 422, 1.5))
    observe(answered("unmatched", "GET", 404, 0.2))
    return {
      ok: yield* Metric.value(Metrics.httpRequests({ route, method: "POST", status: "200" })),
      refused: yield* Metric.value(Metrics.httpRequests({ route, method: "POST", status: "422" })),
      unmatched: yield* Metric.value(Metrics.httpRequests({ route: "unmatched", method: "GET", status: "404" })),
      duration: yield* Metric.value(Metrics.httpRequestDuration({ route }))
    }
  }).pipe(Effect.provideService(Metric.MetricRegistry, registry)))
  expect(read.ok.count).toBe(2)
  expect(read.refused.count).toBe(1)
  expect(read.unmatched.count).toBe(1)
  expect(read.duration.count).toBe(3)
  expect(read.duration.sum).toBeCloseTo(0.0049, 10)
  // 0.4 ms in the first bucket (≤ 1 ms), 1.5 ms in ≤ 2 ms, 3 ms in ≤ 4 ms.
  expect(read.duration.buckets.slice(0, 3)).toEqual([[0.001, 1], [0.002, 2], [0.004, 3]])
})

it("two observers in one registry count into the same series", async () => {
  const registry: Metric.MetricRegistry = new Map()
  const count = await Effect.runPromise(Effect.gen(function*() {
    const first = yield* makeRequestMetrics
    const second = yield* makeRequestMetrics
    first(answered(route, "POST", 200, 1))
    second(answered(route, "POST", 200, 1))
    first(answered(route, "POST", 200, 1))
    return (yield* Metric.value(Metrics.httpRequests({ route, method: "POST", status: "200" }))).count
  }).pipe(Effect.provideService(Metric.MetricRegistry, registry)))
  expect(count).toBe(3)
})
