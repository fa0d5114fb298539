/**
 * Issue 30, traces (CONTRACT §18): `lm serve` as a child process with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an
 * OTLP/HTTP receiver this test runs on loopback (JSON encoding, `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`). A
 * management call (Effect stack) and a validation (fast path), each with the caller's `traceparent`: the request's
 * server span continues the caller's trace under its span and carries route and status; the domain operation is
 * its child; the store's SQL statements are descendants of the request span. The metrics arrive there too. On PostgreSQL with `DATABASE_URL`,
 * else on embedded PGlite.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createServer, type Server } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, expect, it } from "vitest"
import { Effect } from "effect"
import { adminAuth, adminKey } from "../../packages/http/test/support/App.js"
import { admin, databaseUrl } from "../storage-contract/pg-support.js"
import { eventually } from "../support/eventually.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { migratedPgliteFolder } from "./support/PgliteFolder.js"
import { serviceUrl } from "../support/services.js"

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: Record<string, unknown>
}

let server: ServerProcess | undefined
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  server = undefined
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** An OTLP/HTTP receiver: every span posted to `/v1/traces` (JSON), attributes flattened. */
const startCollector = async () => {
  const spans: Array<Span> = []
  const paths: Array<string> = []
  const metricNames = new Set<string>()
  const collector: Server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk: Buffer) => body += chunk.toString("utf8"))
    request.on("end", () => {
      paths.push(request.url ?? "")
      if (request.url === "/v1/metrics") {
        for (const resource of JSON.parse(body).resourceMetrics ?? []) {
          for (const scope of resource.scopeMetrics ?? []) for (const metric of scope.metrics ?? []) metricNames.add(metric.name)
        }
      }
      if (request.url === "/v1/traces") {
        for (const resource of JSON.parse(body).resourceSpans ?? []) {
          for (const scope of resource.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              const attributes: Record<string, unknown> = {}
              for (const { key, value } of span.attributes ?? []) attributes[key] = Object.values(value)[0]
              spans.push({ ...span, attributes })
            }
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
  cleanups.push(() => new Promise((resolve) => collector.close(() => resolve())))
  const { port } = collector.address() as { port: number }
  return { endpoint: `http://127.0.0.1:${port}`, spans, paths, metricNames }
}

/** A store of its own: a fresh PostgreSQL database with `DATABASE_URL`, else a PGlite folder. */
const storeEnv = async (): Promise<Record<string, string>> => {
  const url = serviceUrl("DATABASE_URL")
  if (url !== "") {
    const database = `lm_traces_${process.pid}_${Date.now()}`
    await Effect.runPromise(admin(url, `CREATE DATABASE ${database}`))
    cleanups.push(() => Effect.runPromise(admin(url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)))
    return { DATABASE_URL: databaseUrl(url, database), LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lm-traces-"))
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
  return { LM_DATA_DIR: await migratedPgliteFolder(dir) }
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex")

it("a span per request continuing the caller's traceparent, with route and status; domain and SQL spans below it", async () => {
  const collector = await startCollector()
  server = spawnServer({
    ...(await storeEnv()),
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "lm-test",
    OTEL_BSP_SCHEDULE_DELAY: "200",
    OTEL_METRIC_EXPORT_INTERVAL: "500",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
  })
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+?)[\s"]/, 120_000)
  const v1 = new URL(apiBase!).pathname

  const management = { traceId: hex(16), spanId: hex(8) }
  const created = await fetch(`${apiBase}/licenses`, {
    method: "POST",
    headers: {
      authorization: adminAuth,
      "content-type": "application/json",
      traceparent: `00-${management.traceId}-${management.spanId}-01`
    },
    body: JSON.stringify({ max_activations: 1 })
  })
  expect(created.status).toBe(201)
  const key = ((await created.json()) as { data: { license_key: string } }).data.license_key

  const client = { traceId: hex(16), spanId: hex(8) }
  const validated = await fetch(`${apiBase}/validate`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: `00-${client.traceId}-${client.spanId}-01` },
    body: JSON.stringify({ license_key: key })
  })
  expect(validated.status).toBe(200)

  // The metrics go to the same collector, the request counts among them.
  await eventually(() => expect(collector.metricNames).toContain("lm_http_requests_total"), { timeout: 20_000 })

  /** The request span of a trace (the caller's span its parent), once it has arrived. */
  const requestSpan = (caller: { traceId: string; spanId: string }) =>
    eventually(() => {
      const found = collector.spans.find((span) => span.traceId === caller.traceId && span.parentSpanId === caller.spanId)
      expect(found).toBeDefined()
      return found!
    }, { timeout: 20_000 })
  /** Whether `span` is below `ancestor` in its trace. */
  const below = (span: Span, ancestor: Span): boolean => {
    let parent = span.parentSpanId
    for (let hops = 0; parent !== undefined && parent !== "" && hops < 50; hops++) {
      if (parent === ancestor.spanId) return true
      parent = collector.spans.find((s) => s.traceId === span.traceId && s.spanId === parent)?.parentSpanId
    }
    return false
  }

  const managementSpan = await requestSpan(management)
  expect(managementSpan.attributes).toMatchObject({ "http.route": `${v1}/licenses`, "http.request.method": "POST" })
  expect(Number(managementSpan.attributes["http.response.status_code"])).toBe(201)
  const clientSpan = await requestSpan(client)
  expect(clientSpan.attributes).toMatchObject({ "http.route": `${v1}/validate`, "http.request.method": "POST" })
  expect(Number(clientSpan.attributes["http.response.status_code"])).toBe(200)

  await eventually(() => {
    const inTrace = (traceId: string) => collector.spans.filter((span) => span.traceId === traceId)
    // The domain operation (`Effect.fn("Licenses.create")`) and the SQL statements run under the request.
    const create = inTrace(management.traceId).find((span) => span.name === "Licenses.create")
    expect(create && below(create, managementSpan)).toBe(true)
    const validate = inTrace(client.traceId).find((span) => span.name === "Licensing.validate")
    expect(validate && below(validate, clientSpan)).toBe(true)
    const sql = (traceId: string, request: Span) =>
      inTrace(traceId).filter((span) => span.attributes["db.system.name"] !== undefined || span.attributes["db.system"] !== undefined)
        .filter((span) => below(span, request))
    expect(sql(management.traceId, managementSpan).length).toBeGreaterThan(0)
    expect(sql(client.traceId, clientSpan).length).toBeGreaterThan(0)
  }, { timeout: 20_000 })

  // Nothing secret in any span: not the key, not the consumer secret.
  const exported = JSON.stringify(collector.spans)
  expect(exported).not.toContain(adminKey.consumerSecret)
  expect(exported).not.toContain(key)
  expect(collector.spans.every((span) => span.traceId.length === 32)).toBe(true)

  server.child.kill("SIGTERM")
  expect(await exitWithin(server, 20_000)).toBe(0)
}, 180_000)
