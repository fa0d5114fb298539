/**
 * Issue 30, metrics (CONTRACT §18): `lm serve` with `LM_METRICS_PORT` as a child process. A scripted set of
 * requests, on both transports (the fast path takes the plain client calls; a query string sends one to the
 * Effect stack), then `/metrics` is read: every named series is listed, and the counts are the requests sent,
 * by route template, method and status; the domain's series (validations, seat changes, rate limits,
 * subscription moves, webhook deliveries from the background job) count what happened. `/health/live` and
 * `/health/ready`, which is 503 while the server drains, and (with `DATABASE_URL`) while the store is down.
 */
import { afterEach, describe, expect, it } from "vitest"
import { adminAuth, adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { startReceiver } from "../support/receiver.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { connect, requestText } from "./support/RawHttp.js"
import { startProxiedDatabase } from "./support/ProxiedDatabase.js"
import { serviceUrl } from "../support/services.js"

let server: ServerProcess | undefined
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  server = undefined
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const common = {
  PORT: "0",
  HOST: "127.0.0.1",
  LM_METRICS_PORT: "0",
  LM_SWEEP_INTERVAL: "0",
  LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
  LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
}

/** Starts the server; its API base and its metrics origin. */
const start = async (env: Record<string, string>) => {
  server = spawnServer({ ...common, ...env })
  const [, metrics] = await waitForOutput(server, /Metrics on (http:\/\/\S+)\/metrics/)
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+)/)
  return { apiBase: apiBase!, metrics: metrics! }
}

/** The samples of a Prometheus text, by series (`name{labels}`, labels as printed). */
const scrape = async (metrics: string): Promise<Map<string, number>> => {
  const response = await fetch(`${metrics}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
  const samples = new Map<string, number>()
  for (const line of (await response.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const space = line.lastIndexOf(" ")
    samples.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return samples
}

/** The names of the series a Prometheus text declares (`# TYPE name type`). */
const declared = async (metrics: string): Promise<Set<string>> =>
  new Set([...(await (await fetch(`${metrics}/metrics`)).text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!))

const json = { "content-type": "application/json" }

const call = async (apiBase: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${apiBase}${path}`, {
    method,
    headers: { authorization: adminAuth, ...(body === undefined ? {} : json) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

it("counts every request on both transports, and the domain's series, as the scripted requests made them", async () => {
  const receiver = await startReceiver()
  cleanups.push(() => receiver.close())
  const { apiBase, metrics } = await start({
    LM_STORAGE: "memory",
    LM_RATE_LIMIT: "on",
    LM_RATE_LIMIT_PER_KEY: "4",
    LM_WEBHOOK_ALLOW_INSECURE: "1",
    LM_WEBHOOK_ALLOW_PRIVATE: "1"
  })
  const v1 = new URL(apiBase).pathname
  const before = await scrape(metrics)
  const delta = (after: Map<string, number>, series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0)

  // Effect stack: management calls.
  expect((await call(apiBase, "POST", "/webhooks", { url: receiver.url, events: ["license.created"] })).status).toBe(201)
  const created = await call(apiBase, "POST", "/licenses", { max_activations: 2 })
  expect(created.status).toBe(201)
  const key: string = created.body.data.license_key
  const subscription = await call(apiBase, "POST", "/subscriptions", {
    user_id: 7,
    billing_period: "month",
    billing_interval: 1,
    amount: "30.00",
    currency: "USD"
  })
  expect(subscription.status).toBe(201)
  expect((await call(apiBase, "POST", `/subscriptions/${subscription.body.data.id}/pause`)).status).toBe(200)
  expect((await call(apiBase, "GET", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZZ")).status).toBe(404)
  expect((await call(apiBase, "GET", "/no-such-route")).status).toBe(404)

  // Client calls: two validations on the fast path, one on the Effect stack (a query string), activate and
  // deactivate on the fast path, then the key's limit (4 a minute, validations and seat changes alike) refuses.
  const post = (path: string, body: unknown) => fetch(`${apiBase}${path}`, { method: "POST", headers: json, body: JSON.stringify(body) })
  expect((await post("/validate", { license_key: key })).status).toBe(200)
  expect((await post("/validate", { license_key: key })).status).toBe(200)
  expect((await post("/validate?via=stack", { license_key: key })).status).toBe(200)
  expect((await post("/activate", { license_key: key, fingerprint: "m-1" })).status).toBe(201)
  expect((await post("/activate", { license_key: key, fingerprint: "m-2" })).status).toBe(429)
  expect((await post("/validate", { license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" })).status).toBe(404)

  // The webhook's deliveries (the license's and the subscription's license's) are attempted by the background job.
  await eventually(() => expect(receiver.received.length).toBe(2), { timeout: 20_000 })
  const after = await eventually(async () => {
    const samples = await scrape(metrics)
    expect(delta(samples, `lm_webhook_deliveries_total{result="delivered"}`)).toBe(2)
    return samples
  })

  const requests = (route: string, method: string, status: number) =>
    delta(after, `lm_http_requests_total{route="${v1}${route}",method="${method}",status="${status}"}`)
  expect(requests("/validate", "POST", 200)).toBe(3)
  expect(requests("/validate", "POST", 404)).toBe(1)
  expect(requests("/activate", "POST", 201)).toBe(1)
  expect(requests("/activate", "POST", 429)).toBe(1)
  expect(requests("/licenses", "POST", 201)).toBe(1)
  expect(requests("/licenses/:key", "GET", 404)).toBe(1)
  expect(requests("/subscriptions/:id/pause", "POST", 200)).toBe(1)
  expect(delta(after, `lm_http_requests_total{route="unmatched",method="GET",status="404"}`)).toBe(1)
  expect(delta(after, `lm_http_request_duration_seconds_count{route="${v1}/validate"}`)).toBe(4)
  expect(delta(after, `lm_http_request_duration_seconds_bucket{route="${v1}/validate",le="+Inf"}`)).toBe(4)

  expect(delta(after, `lm_validations_total{code="valid"}`)).toBe(3)
  expect(delta(after, `lm_validations_total{code="license_not_found"}`)).toBe(1)
  expect(delta(after, `lm_seat_changes_total{kind="activate",result="activated"}`)).toBe(1)
  expect(delta(after, `lm_rate_limited_total{limit="key"}`)).toBe(1)
  expect(delta(after, `lm_subscription_moves_total{to="on-hold"}`)).toBe(1)
  expect(after.get("lm_webhook_backlog")).toBe(0)
  expect(after.get("lm_event_log_dropped_total")).toBe(0)
  expect(after.get("lm_store_unavailable_total")).toBe(0)
  expect(after.get("lm_process_resident_memory_bytes")).toBeGreaterThan(0)
  expect(after.has(`lm_event_loop_delay_seconds{quantile="0.99"}`)).toBe(true)

  const names = await declared(metrics)
  for (
    const name of [
      "lm_http_requests_total",
      "lm_http_request_duration_seconds",
      "lm_validations_total",
      "lm_seat_changes_total",
      "lm_webhook_deliveries_total",
      "lm_webhook_backlog",
      "lm_event_log_buffered",
      "lm_event_log_dropped_total",
      "lm_rate_limited_total",
      "lm_subscription_moves_total",
      "lm_store_unavailable_total",
      "lm_process_resident_memory_bytes",
      "lm_event_loop_delay_seconds"
    ]
  ) expect(names, name).toContain(name)

  // The metrics listener's own requests are not counted among the API's.
  expect([...after.keys()].some((series) => series.includes("/metrics") || series.includes("/health/"))).toBe(false)
}, 90_000)

it("/health/live answers 200; /health/ready 200, then 503 while the server drains", async () => {
  const { apiBase, metrics } = await start({ LM_STORAGE: "memory", LM_RATE_LIMIT: "off" })
  expect((await fetch(`${metrics}/health/live`)).status).toBe(200)
  const ready = await fetch(`${metrics}/health/ready`)
  expect(ready.status).toBe(200)
  expect(await ready.json()).toEqual({ status: "ready" })

  // A request whose body is still on its way keeps the server draining after SIGTERM.
  const url = new URL(apiBase)
  const slow = await connect(Number(url.port))
  const body = JSON.stringify({ license_key: "AAAA-BBBB-CCCC-DDDD" })
  slow.write(requestText("POST", `${url.pathname}/validate`, { ...json, "content-length": String(body.length) }) + body.slice(0, 5))
  server!.child.kill("SIGTERM")
  await waitForOutput(server!, /Shutting down/)
  const draining = await fetch(`${metrics}/health/ready`)
  expect(draining.status).toBe(503)
  expect(await draining.json()).toEqual({ status: "draining" })
  expect((await fetch(`${metrics}/health/live`)).status).toBe(200)
  slow.write(body.slice(5))
  expect((await slow.next()).status).toBe(404)
  expect(await exitWithin(server!, 20_000)).toBe(0)
}, 60_000)

const url = serviceUrl("DATABASE_URL")

describe.skipIf(url === "")("with PostgreSQL behind a proxy", () => {
  it("/health/ready is 503 while the store is down and 200 once it is back; failed store calls are counted", async () => {
    const database = await startProxiedDatabase(url!, `lm_metrics_${process.pid}_${Date.now()}`)
    cleanups.push(database.close)
    const { proxy } = database
    const { apiBase, metrics } = await start({ DATABASE_URL: database.url, LM_RATE_LIMIT: "off" })
    expect((await fetch(`${metrics}/health/ready`)).status).toBe(200)

    await proxy.cut()
    const down = await fetch(`${metrics}/health/ready`)
    expect(down.status).toBe(503)
    expect(await down.json()).toEqual({ status: "store_unavailable" })
    expect((await call(apiBase, "GET", "/licenses")).status).toBe(503)
    expect((await scrape(metrics)).get("lm_store_unavailable_total")).toBeGreaterThanOrEqual(2)
    expect((await fetch(`${metrics}/health/live`)).status).toBe(200)

    await proxy.restore()
    await eventually(async () => expect((await fetch(`${metrics}/health/ready`)).status).toBe(200), { timeout: 20_000 })
  }, 120_000)
})
