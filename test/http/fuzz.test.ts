/**
 * Issue 4, robustness: every route of the API (listed from the server's own OpenAPI document, so new routes are
 * covered without touching this file) fed requests it must refuse: wrong methods, unknown paths, malformed and
 * unknown targets, bad credentials, bad query parameters, bodies that are not JSON objects, fields of the wrong
 * type or out of range, missing and unknown fields, nulls, 900 KB strings, 1e308, 2^53+1, 10 000 levels of
 * nesting, NUL and unpaired surrogates. Each answer must be a 4xx in the error envelope with `data.status` equal
 * to the HTTP status and an `X-Request-Id`, within `ANSWER_WITHIN_MS` (a hang detector, not a benchmark). Afterwards the server
 * is up, every object stored before reads back byte for byte as before, and the event log is still written.
 * On the memory store and on PGlite.
 */
import { Effect } from "effect"
import fc from "fast-check"
import { ActivityRecorder, AuditLog, Ports } from "@lm/domain"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminAuth, startApp, type TestApp } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import {
  describeRequest,
  type FuzzContext,
  type FuzzRequest,
  fillPath,
  fixedRequests,
  operationsOf,
  refusedRequest
} from "./support/Fuzz.js"
import { eventually } from "../support/eventually.js"

/**
 * The hang bound per request: an answer that takes this long is a hang, not a slow answer. Generous, because the
 * suite runs files in parallel on two cores (answers of over a second were seen under that load); it is no speed
 * check (bench/ measures speed).
 */
const ANSWER_WITHIN_MS = 10_000

/**
 * How many random requests a run sends (a fixed number, not a time budget, so a run's cost and coverage do not
 * depend on the machine's load): `LM_FUZZ_RUNS` for a deliberate, longer fuzz. fast-check prints the seed and
 * path of a failure; `LM_FUZZ_SEED` replays a seed.
 */
const fuzzRuns = {
  numRuns: Number(process.env.LM_FUZZ_RUNS ?? 400),
  ...(process.env.LM_FUZZ_SEED === undefined ? {} : { seed: Number(process.env.LM_FUZZ_SEED) })
}
/** A hang fails the request within 15 s; the whole property is bounded by its count (1 s a request under load). */
const fuzzTimeout = Math.max(120_000, fuzzRuns.numRuns * 1_000)

/** How many of the fixed requests are in flight at once. */
const FIXED_IN_FLIGHT = 4

/** What came back for one request. */
interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly ms: number
}

/** Sends a request to `origin` and reads the whole answer; a request that gets no answer at all throws. */
const send = async (origin: string, request: FuzzRequest): Promise<Answer> => {
  const started = performance.now()
  const response = await fetch(origin + request.path, {
    method: request.method,
    headers: request.headers,
    redirect: "manual",
    signal: AbortSignal.timeout(15_000),
    ...(request.body === undefined ? {} : { body: request.body })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, ms: performance.now() - started }
}

/** What is wrong with the answer to a request that must be refused, or undefined when nothing is. */
const refusalProblem = (answer: Answer): string | undefined => {
  const excerpt = answer.text.length > 300 ? `${answer.text.slice(0, 300)}…` : answer.text
  if (answer.status < 400 || answer.status > 499) return `status ${answer.status} (want 4xx): ${excerpt}`
  let body: any
  try {
    body = JSON.parse(answer.text)
  } catch {
    return `status ${answer.status} without a JSON body: ${JSON.stringify(excerpt)}`
  }
  if (
    body === null || typeof body !== "object" || body.success !== false || typeof body.code !== "string" ||
    typeof body.message !== "string" || typeof body.data !== "object" || body.data === null
  ) {
    return `status ${answer.status} not in the error envelope: ${excerpt}`
  }
  if (body.data.status !== answer.status) return `status ${answer.status} but data.status ${body.data.status}`
  if (!/\S/.test(answer.headers.get("x-request-id") ?? "")) return `status ${answer.status} without X-Request-Id`
  if (answer.ms >= ANSWER_WITHIN_MS) return `answered after ${Math.round(answer.ms)} ms (bound ${ANSWER_WITHIN_MS} ms)`
  return undefined
}

/** A refused request as sent and answered: what the audit log is checked against. */
interface Refusal {
  readonly request: FuzzRequest
  readonly status: number
  readonly code: string | undefined
  readonly requestId: string
}

/**
 * Sends a request that must be refused; the problem with its answer (or with sending it), or undefined. Each
 * answered request goes to `sent`.
 */
const tryRefused = async (origin: string, request: FuzzRequest, sent?: Array<Refusal>): Promise<string | undefined> => {
  let answer: Answer
  try {
    answer = await send(origin, request)
  } catch (error) {
    return `no answer (${error instanceof Error ? `${error.message}${error.cause ? `: ${String(error.cause)}` : ""}` : String(error)})`
  }
  let code: string | undefined
  try {
    code = JSON.parse(answer.text)?.code
  } catch {
    code = undefined
  }
  sent?.push({ request, status: answer.status, code, requestId: answer.headers.get("x-request-id") ?? "" })
  return refusalProblem(answer)
}

/** The whole audit log, read from the store (the fuzz writes thousands of entries: more than the API's pages). */
const auditLogOf = (app: TestApp) =>
  app.run(Effect.flatMap(AuditLog, (log) => log.list({}, { page: 1, perPage: 1_000_000 }))).then((result) => result.items)

/**
 * What is wrong with the audit log after the fuzz (CONTRACT §18: every management write, refused ones included,
 * with the status it was answered): an entry of a fuzz request must hold the status sent; and a write by a valid
 * key refused by its scope or by the domain (403, 404 other than `rest_no_route`, 409) must have its entry.
 */
const auditProblems = async (app: TestApp, sent: ReadonlyArray<Refusal>, keys: ReadonlyArray<string>, context: FuzzContext) => {
  // The client routes (`/heartbeat`, ...) take no key: a key sent along is noise, and their refusals are not audited.
  const managementWrites = context.operations.filter((op) => op.management && isWrite(op.method)).map((op) => ({
    method: op.method,
    path: new RegExp(`^${context.apiPath}${op.template.replace(/\{[^}]+\}/g, "[^/]+")}$`)
  }))
  const byRequestId = new Map<string, Array<{ readonly status: number; readonly action: string }>>()
  for (const entry of await auditLogOf(app)) {
    if (entry.requestId === null) continue
    byRequestId.set(entry.requestId, [...byRequestId.get(entry.requestId) ?? [], entry])
  }
  // The fuzz sends some request ids of its own (`ok-id.1:2@3+4=5`), which the server keeps: those name no one request.
  const timesSent = new Map<string, number>()
  for (const { requestId } of sent) timesSent.set(requestId, (timesSent.get(requestId) ?? 0) + 1)
  const problems: Array<string> = []
  for (const refusal of sent) {
    if (refusal.requestId === "" || timesSent.get(refusal.requestId)! > 1) continue
    const entries = byRequestId.get(refusal.requestId) ?? []
    const wrong = entries.filter((entry) => entry.status !== refusal.status)
    if (wrong.length > 0 || entries.length > 1) {
      problems.push(`answered ${refusal.status}, logged ${entries.map((e) => `${e.action} ${e.status}`).join(", ")}\n    ${describeRequest(refusal.request)}`)
    }
    // A 400 may come before the endpoint (a NUL, an unpaired surrogate or deep nesting in the body is refused
    // by the envelope middleware first), so only the refusals of the scope and of the domain are required here.
    const reachedEndpoint = refusal.status === 403 || refusal.status === 409 ||
      (refusal.status === 404 && refusal.code !== "rest_no_route")
    const byValidKey = keys.includes(refusal.request.headers["authorization"] ?? "") &&
      managementWrites.some((route) => route.method === refusal.request.method && route.path.test(refusal.request.path.split("?")[0]!))
    if (isWrite(refusal.request.method) && byValidKey && reachedEndpoint && entries.length === 0) {
      problems.push(`answered ${refusal.status} ${refusal.code}, not in the audit log\n    ${describeRequest(refusal.request)}`)
    }
  }
  return problems
}

const isWrite = (method: string) => !["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase())

/** The data stored before fuzzing. */
interface Seeded {
  readonly licenses: ReadonlyArray<{ readonly key: string; readonly id: number }>
  readonly machines: ReadonlyArray<number>
  readonly generators: ReadonlyArray<number>
  readonly apiKeys: ReadonlyArray<number>
  readonly read: string
  readonly write: string
}

/**
 * Licenses in several states with machines (node-locked, floating, revoked, deactivated by termination), two
 * generators (one with a pool), and a read and a write API key, each key used once.
 */
const seed = async (app: TestApp): Promise<Seeded> => {
  const ok = async (method: string, path: string, body?: unknown, status = 200, auth?: null) => {
    const res = await app.call(method, path, { ...(body === undefined ? {} : { body }), ...(auth === null ? { auth } : {}) })
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status)
    return res.body.data
  }
  const farFuture = "2099-01-01T00:00:00.000Z"
  const licenses: Array<{ key: string; id: number }> = []
  const machines: Array<number> = []
  const license = async (body: Record<string, unknown>) => {
    const data = await ok("POST", "/licenses", body, 201)
    licenses.push({ key: data.license_key, id: data.id })
    return data.license_key as string
  }
  const activate = async (key: string, fingerprint: string, extra: Record<string, unknown> = {}) => {
    const data = await ok("POST", "/activate", { license_key: key, fingerprint, ...extra }, 201, null)
    machines.push(data.id)
    return data.id as number
  }

  const pro = await license({
    license_key: "FZZA-AAAA-BBBB-CCCC",
    product_id: 7,
    order_id: 8,
    user_id: 9,
    max_activations: 3,
    overage_strategy: "allow_1_5x",
    expires_at: farFuture,
    grace_days: 3,
    meta: { tier: "pro", seats: [1, 2], note: "ünïcödé ✓" }
  })
  await activate(pro, "fz-machine-1", {
    name: "Build box",
    hostname: "build-1",
    platform: "linux",
    app_version: "1.2.3",
    components: [{ kind: "cpu", fingerprint: "cpu-1", name: "Xeon" }, { kind: "disk", fingerprint: "disk-1" }],
    meta: { rack: 4 }
  })
  await activate(pro, "fz-machine-2")
  const floating = await license({ is_floating: true, lease_duration: 86_400, max_activations: 2, product_id: 7 })
  await activate(floating, "fz-floating-1", { app_version: "2.0.0" })
  const suspended = await license({ valid_for_days: 30, require_heartbeat: false })
  await activate(suspended, "fz-suspended-1")
  await ok("POST", `/licenses/${suspended}/suspend`)
  const withRevoked = await license({ max_activations: 2 })
  await activate(withRevoked, "fz-keep")
  await ok("POST", `/machines/${await activate(withRevoked, "fz-revoked")}/revoke`)
  const terminated = await license({})
  await activate(terminated, "fz-terminated")
  await ok("POST", `/licenses/${terminated}/terminate`, { confirm: true })
  await license({ max_activations: 0, meta: {} })

  const pool = await ok("POST", "/generators", { name: "fuzz pool", prefix: "FZ", chunk_length: 5, product_id: 7, default_max_activations: 2 }, 201)
  await ok("POST", `/generators/${pool.id}/generate`, { count: 3, max_activations: 4 }, 201)
  const drawn = await ok("POST", "/licenses", { generator_id: pool.id }, 201)
  licenses.push({ key: drawn.license_key, id: drawn.id })
  const plain = await ok("POST", "/generators", { name: "plain" }, 201)

  const reader = await ok("POST", "/api-keys", { scope: "read", description: "fuzz reader" }, 201)
  const writer = await ok("POST", "/api-keys", { scope: "write", description: "fuzz writer" }, 201)
  const read = basic(reader.consumer_key, reader.consumer_secret)
  const write = basic(writer.consumer_key, writer.consumer_secret)
  // Use each key once now: `last_access_at` is then set, and is not written again within a minute.
  expect((await app.call("GET", "/licenses", { auth: read })).status).toBe(200)
  expect((await app.call("POST", "/licenses", { auth: write, body: [] })).status).toBe(400)
  const keys = (await app.call("GET", "/api-keys?per_page=100")).body.data
  return {
    licenses,
    machines,
    generators: [pool.id, plain.id],
    apiKeys: keys.api_keys.map((k: { id: number }) => k.id),
    read,
    write
  }
}

/**
 * The raw body of every GET route for every stored target, by path. Left out: routes that need query values
 * (`/updates/check` answers about a given version, `/updates/download` streams a token's artifact, not what is
 * stored) and the analytics, which count the fuzzing's own calls.
 */
const snapshot = async (app: TestApp, context: FuzzContext): Promise<Record<string, string>> => {
  const out: Record<string, string> = {}
  for (const op of context.operations) {
    if (op.method !== "GET" || op.template === "/openapi.json") continue
    if (op.query.some((q) => q.required) || op.template.startsWith("/analytics/") || op.template === "/updates/download") continue
    // The audit log grows with every write the fuzz sends, refused ones included: checked by `auditProblems`.
    if (op.template === "/audit-log") continue
    const combinations = op.pathParams.reduce<Array<Record<string, string>>>(
      (acc, param) => {
        const collection = param === "key" ? "licenses" : op.template.split("/")[op.template.split("/").indexOf(`{${param}}`) - 1]!
        return acc.flatMap((values) => (context.targets[collection] ?? []).map((target) => ({ ...values, [param]: target })))
      },
      [{}]
    )
    for (const values of combinations) {
      const paged = op.query.some((q) => q.name === "per_page")
      const path = fillPath(op.template, values) + (paged ? "?per_page=100" : "")
      const response = await fetch(`${app.apiBase}${path}`, { headers: op.management ? { authorization: adminAuth } : {} })
      expect(response.status, path).toBe(200)
      out[path] = await response.text()
    }
  }
  return out
}

/** A body as values, for a readable difference: JSON, or NDJSON (the export) line by line. */
const parsed = (text: string): unknown => text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line))

/** A body with its API keys' `last_access_at` values taken out (the keys' use writes them at most once a minute). */
const accessTimesApart = (text: string) => {
  const times: Array<string> = []
  const rest = text.replace(/"last_access_at":"([^"]*)"/g, (_, time: string) => {
    times.push(time)
    return `"last_access_at":"…"`
  })
  return { text: rest, times }
}

/** Counts the event log's entries for a license; a failure to count is returned as a message. */
const loggedFor = (app: TestApp, licenseId: number): Promise<number | string> =>
  app.run(Effect.exit(Effect.gen(function*() {
    return yield* (yield* Ports.ActivityLog).count({ licenseId })
  }))).then((exit) =>
    exit._tag === "Success" ? exit.value : `counting failed: ${String(exit.cause).slice(0, 300)}`
  )

/**
 * Validates a stored license and waits for the background writer (it flushes every 250 ms) to put the entry in
 * the event log: polled up to 10 s, a hang bound. Returns what went wrong, or undefined.
 */
const eventLogProblem = async (app: TestApp, license: { readonly key: string; readonly id: number }): Promise<string | undefined> => {
  // Entries of earlier calls are buffered before their answers: flushed now, the count is settled.
  await app.run(Effect.flatMap(ActivityRecorder, (recorder) => recorder.flush))
  const before = await loggedFor(app, license.id)
  if (typeof before === "string") return before
  const validated = await app.call("POST", "/validate", { body: { license_key: license.key }, auth: null })
  if (validated.status !== 200) return `validate answered ${validated.status}`
  let now: number | string = before
  await eventually(async () => {
    now = await loggedFor(app, license.id)
    expect(now).not.toBe(before)
  }, { timeout: 10_000, interval: 50 }).catch(() => {})
  return now === before + 1 ? undefined : `the event log of license ${license.id} went from ${before} to ${now} entries after one validate`
}

for (const store of ["memory", "pglite"] as const) {
  describe(`fuzzing every route on ${store}`, () => {
    let app: TestApp
    let seeded: Seeded
    let context: FuzzContext
    let before: Record<string, string>
    /** The refused requests the fuzz sent, for the audit log's check. */
    const refusals: Array<Refusal> = []

    beforeAll(async () => {
      app = await startApp(store)
      seeded = await seed(app)
      const response = await fetch(`${app.apiBase}/openapi.json`)
      expect(response.status).toBe(200)
      const apiPath = new URL(app.apiBase).pathname
      const operations = operationsOf(await response.json(), apiPath)
      context = {
        apiPath,
        operations,
        targets: {
          licenses: seeded.licenses.map((l) => l.key),
          machines: seeded.machines.map(String),
          generators: seeded.generators.map(String),
          "api-keys": seeded.apiKeys.map(String)
        },
        auth: { admin: adminAuth, read: seeded.read, write: seeded.write }
      }
      before = await snapshot(app, context)
    })
    afterAll(() => app?.close())

    it("lists every route of the contract in its OpenAPI document", () => {
      const routes = new Set(context.operations.map((op) => `${op.method} ${op.template}`))
      for (
        const route of [
          "POST /validate",
          "POST /activate",
          "POST /deactivate",
          "POST /heartbeat",
          "GET /crl",
          "GET /public-key",
          "GET /public-keyk",
          "GET /health",
          "GET /openapi.json",
          "GET /licenses",
          "POST /licenses",
          "GET /licenses/{key}",
          "PUT /licenses/{key}",
          "DELETE /licenses/{key}",
          "POST /licenses/{key}/renew",
          "POST /licenses/{key}/terminate",
          "GET /licenses/{key}/machines",
          "GET /machines/{id}",
          "DELETE /machines/{id}",
          "POST /machines/{id}/revoke",
          "GET /generators",
          "POST /generators",
          "PUT /generators/{id}",
          "POST /generators/{id}/generate",
          "GET /api-keys",
          "POST /api-keys",
          "DELETE /api-keys/{id}",
          "GET /webhooks",
          "POST /webhooks",
          "GET /webhooks/{id}",
          "PUT /webhooks/{id}",
          "DELETE /webhooks/{id}",
          "POST /webhooks/{id}/ping",
          "GET /webhooks/{id}/deliveries",
          "POST /webhooks/{id}/deliveries/{delivery_id}/redeliver",
          "GET /subscriptions",
          "POST /subscriptions",
          "GET /subscriptions/{id}",
          "PUT /subscriptions/{id}",
          "POST /subscriptions/{id}/pause",
          "POST /subscriptions/{id}/resume",
          "POST /subscriptions/{id}/cancel",
          "POST /subscriptions/{id}/switch",
          "POST /subscriptions/{id}/renew",
          "GET /subscriptions/{id}/renewals",
          "GET /releases",
          "POST /releases",
          "GET /updates/check",
          "GET /updates/download",
          "GET /analytics/overview",
          "GET /analytics/validations",
          "GET /analytics/anomalies",
          "GET /analytics/expiring"
        ]
      ) expect(routes, route).toContain(route)
    })

    it("refuses every fixed nasty request with a 4xx envelope and a request id, within the hang bound", async () => {
      const problems: Array<string> = []
      let sent = 0
      // A few requests in flight at once, drawn from one list: the store's own thread (PGlite's) works while the
      // server's thread answers the next one.
      const requests = fixedRequests(context)
      await Promise.all(Array.from({ length: FIXED_IN_FLIGHT }, async () => {
        for (const request of requests) {
          sent++
          const problem = await tryRefused(app.origin, request, refusals)
          if (problem !== undefined) problems.push(`${problem}\n    ${describeRequest(request)}`)
        }
      }))
      expect(problems.length, `${problems.length} of ${sent} requests:\n${problems.slice(0, 40).join("\n")}`).toBe(0)
    }, 600_000)

    it("refuses random spoiled requests (fast-check) with a 4xx envelope and a request id, within the hang bound", async () => {
      await fc.assert(
        fc.asyncProperty(refusedRequest(context), async (request) => {
          const problem = await tryRefused(app.origin, request, refusals)
          if (problem !== undefined) throw new Error(`${problem}\n    ${describeRequest(request)}`)
        }),
        { ...fuzzRuns, endOnFailure: true }
      )
    }, fuzzTimeout)

    it("is still up, and every stored object reads back byte for byte as before", async () => {
      expect((await app.call("GET", "/health", { auth: null })).status).toBe(200)
      const after = await snapshot(app, context)
      expect(Object.keys(after)).toEqual(Object.keys(before))
      for (const path of Object.keys(before)) {
        const [was, is] = [accessTimesApart(before[path]!), accessTimesApart(after[path]!)]
        expect(parsed(is.text), path).toEqual(parsed(was.text))
        expect(is.text, path).toBe(was.text)
        // The fuzz's requests use the API keys: a `last_access_at` a minute old moves on, never back.
        expect(is.times.length, path).toBe(was.times.length)
        is.times.forEach((time, i) => expect(Date.parse(time), `${path} last_access_at`).toBeGreaterThanOrEqual(Date.parse(was.times[i]!)))
      }
    })

    it("records every refused write that reached its endpoint in the audit log, with the status it was answered", async () => {
      expect(refusals.length).toBeGreaterThan(0)
      const problems = await auditProblems(app, refusals, [adminAuth, seeded.read, seeded.write], context)
      expect(problems.length, `${problems.length} of ${refusals.length} requests:\n${problems.slice(0, 40).join("\n")}`).toBe(0)
    })

    it("still writes the event log in the background", async () => {
      expect(await eventLogProblem(app, seeded.licenses[0]!)).toBeUndefined()
    })
  })
}

/**
 * Text PostgreSQL cannot hold as is: U+0000 (no text or jsonb value may contain it) and unpaired surrogates (not
 * encodable as UTF-8). Each write either keeps the text exactly as sent or refuses it with 400; never a 500,
 * never a silently altered value (a fingerprint changed on the way in would no longer match its machine).
 */
for (const store of ["memory", "pglite"] as const) {
  describe(`text with U+0000 or unpaired surrogates on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store)
    })
    afterAll(() => app?.close())

    const texts = { nul: "a\u0000b", surrogate: "a\ud800b" } as const
    const newKey = async () => (await app.call("POST", "/licenses", { body: {} })).body.data.license_key as string

    /** Kept as sent (`read` finds the text where it was written), or refused with 400; anything else is listed. */
    const keptOrRefused = async (
      label: string,
      call: Promise<{ status: number; body: any }>,
      read: (data: any) => Promise<unknown> | unknown,
      text: string
    ): Promise<string | undefined> => {
      const res = await call
      if (res.status === 400 && res.body?.code === "rest_invalid_param") return undefined
      if (res.status >= 300) return `${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`
      const stored = await read(res.body.data)
      return stored === text ? undefined : `${label}: answered ${res.status} but stored ${JSON.stringify(stored)} for ${JSON.stringify(text)}`
    }

    for (const [name, text] of Object.entries(texts)) {
      it(`keeps or refuses ${name} text in every stored field, never a 500`, async () => {
        const get = async (path: string) => (await app.call("GET", path)).body.data
        const activate = async (fields: Record<string, unknown>) =>
          app.call("POST", "/activate", { body: { license_key: await newKey(), fingerprint: "fp-1", ...fields }, auth: null })
        const machine = (field: string) => async (data: any) => (await get(`/machines/${data.id}`))[field]
        const problems = [
          await keptOrRefused("generator name", app.call("POST", "/generators", { body: { name: text } }), async (d) => (await get(`/generators/${d.id}`)).name, text),
          await keptOrRefused(
            "api key description",
            app.call("POST", "/api-keys", { body: { scope: "read", description: text } }),
            async (d) => (await get("/api-keys?per_page=100")).api_keys.find((k: any) => k.id === d.id)?.description,
            text
          ),
          await keptOrRefused("license meta value", app.call("POST", "/licenses", { body: { meta: { note: text } } }), async (d) => (await get(`/licenses/${d.license_key}`)).meta.note, text),
          await keptOrRefused("license meta key", app.call("POST", "/licenses", { body: { meta: { [text]: 1 } } }), async (d) => Object.keys((await get(`/licenses/${d.license_key}`)).meta)[0], text),
          await keptOrRefused("machine name", activate({ name: text }), machine("name"), text),
          await keptOrRefused("machine hostname", activate({ hostname: text }), machine("hostname"), text),
          await keptOrRefused("machine platform", activate({ platform: text }), machine("platform"), text),
          await keptOrRefused("machine app_version", activate({ app_version: text }), machine("app_version"), text),
          await keptOrRefused("machine meta", activate({ meta: { note: text } }), async (d) => (await machine("meta")(d) as any)?.note, text),
          await keptOrRefused(
            "component name",
            activate({ components: [{ kind: "cpu", fingerprint: "cpu-1", name: text }] }),
            async (d) => (await machine("components")(d) as any)?.[0]?.name,
            text
          ),
          await keptOrRefused("machine fingerprint", activate({ fingerprint: `fp-${text}` }), machine("fingerprint"), `fp-${text}`)
        ].filter((p) => p !== undefined)
        const search = await app.call("GET", `/licenses?search=${encodeURIComponent(text.replace(/[\ud800-\udfff]/g, ""))}`)
        if (search.status >= 500) problems.push(`license search: ${search.status}`)
        expect(problems.length, problems.join("\n")).toBe(0)
      })
    }

    it("keeps writing the event log after client calls carrying such text", async () => {
      const key = await newKey()
      expect((await app.call("POST", "/activate", { body: { license_key: key, fingerprint: "fp-log" }, auth: null })).status).toBe(201)
      for (const text of Object.values(texts)) {
        for (const route of ["/validate", "/heartbeat", "/activate"]) {
          const body = { license_key: "0I0I-0I0I-0I0I-0I0I", fingerprint: "fp-log", app_version: text, nonce: text }
          // Whatever these answer (the test above covers that), each is recorded in the event log.
          await app.call("POST", route, { body, auth: null })
          await app.call("POST", route, { body: { ...body, license_key: key }, auth: null })
        }
      }
      const id = (await app.call("GET", `/licenses/${key}`)).body.data.id
      expect(await eventLogProblem(app, { key, id })).toBeUndefined()
    })
  })
}
