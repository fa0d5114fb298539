/**
 * The fast path of the hot client writes (`server/FastPath.ts`) answers exactly what the Effect stack answers.
 *
 * Two servers on the same settings and the same state (memory store, same signing key, same blacklist, seeded
 * by the same calls), one with the fast path and one without, receive the same corpus of requests in the same
 * order: valid calls, every refusal code, every malformed-input class, odd headers and request ids. Each pair
 * of answers must match: status, every header (but `Date`; a generated `X-Request-Id` is a UUID on both), and
 * the body byte for byte once times and the `iat`/`exp` of signed tokens are set aside. A public guard
 * (`ClientGuards`) installed once refuses the same requests on both, on every client route. Run for the default
 * settings and for `LM_REST_ROOT=/wp-json` behind one trusted proxy with `LM_CORS_ORIGINS` set (browser origins
 * listed and not). The fast path's counters show it did
 * serve the hot routes (and the other server's, that it was off).
 */
import { Agent, request as httpRequest } from "node:http"
import { Effect, Layer, Redacted, Result, Schema } from "effect"
import { identity } from "effect/Function"
import { ActivityRecorder, Errors, Ports, type Services, type Validation } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiErrors, commonValidatePayload, ok, ValidatePayload } from "@lm/api"
import { isoNow, machineToWire } from "@lm/api/wire"
import type { ClientGuard, ClientGuardRequest } from "../src/server/ClientPipeline.js"
import { FastPath } from "../src/server/FastPath.js"
import type { Settings } from "../src/server/Settings.js"
import { validateAnswer, validateText } from "../src/handlers/ClientAnswers.js"
import { makeLicense, makeMachine } from "../../domain/test/fixtures.js"
import { adminAuth, startApp, type TestApp } from "./support/App.js"

/** base64 of a fixed 32-byte Ed25519 seed, so that both servers sign with the same key (same `kid`). */
const signingKey = Buffer.alloc(32, 7).toString("base64")

const blacklistedKey = "BLCK-LIST-0000-0001"

/** One request of the corpus; `path` is relative to `{api_base}`. */
interface Case {
  readonly name: string
  readonly method?: string
  readonly path: string
  readonly headers?: Record<string, string>
  /** JSON-encoded unless a string or a Buffer. */
  readonly body?: unknown
  /** Sent with `Transfer-Encoding: chunked` (no `Content-Length`). */
  readonly chunked?: boolean
  /** Sent with `Expect: 100-continue`, the body after the `100 Continue`. */
  readonly expectContinue?: boolean
  /** Sent on a connection of its own, closed after the answer. */
  readonly fresh?: boolean
}

interface Answer {
  readonly status: number
  readonly statusMessage: string
  /** The header names in the order they came. */
  readonly headerOrder: string
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: Buffer
}

/** One keep-alive connection per server, as a client library would keep (a 413 closes it; the next opens anew). */
const agents = new Map<string, Agent>()
const agentFor = (apiBase: string): Agent => {
  let agent = agents.get(apiBase)
  if (agent === undefined) agents.set(apiBase, agent = new Agent({ keepAlive: true, maxSockets: 1 }))
  return agent
}

const send = (apiBase: string, c: Case): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(`${apiBase}${c.path}`)
    const body = c.body === undefined
      ? undefined
      : Buffer.isBuffer(c.body)
      ? c.body
      : Buffer.from(typeof c.body === "string" ? c.body : JSON.stringify(c.body), "utf8")
    const headers: Record<string, string> = { ...c.headers }
    if (body !== undefined && !c.chunked) headers["content-length"] = String(body.length)
    if (c.expectContinue) headers.expect = "100-continue"
    const req = httpRequest(url, { method: c.method ?? "POST", headers, agent: c.fresh ? false : agentFor(apiBase) }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          statusMessage: res.statusMessage ?? "",
          headerOrder: res.rawHeaders.filter((_, i) => i % 2 === 0).join(", "),
          headers: res.headers,
          body: Buffer.concat(chunks)
        }))
      res.on("error", reject)
    })
    req.on("error", reject)
    if (c.expectContinue) {
      req.on("continue", () => req.end(body))
      req.flushHeaders()
    } else if (c.chunked && body !== undefined) {
      req.write(body.subarray(0, 3))
      req.end(body.subarray(3))
    } else {
      req.end(body)
    }
  })

const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A body with its times and the `iat`/`exp` (and signature) of signed tokens set aside. */
const normalize = (value: unknown, key = ""): unknown => {
  if (typeof value === "string") {
    if (isoTime.test(value)) return "<time>"
    if ((key === "signed_payload" || key === "signed_refusal" || key === "certificate" || key === "crl") && value.includes(".")) {
      const payload = JSON.parse(Buffer.from(value.split(".")[0]!, "base64url").toString("utf8"))
      delete payload.iat
      delete payload.exp
      return { token: normalize(payload) }
    }
    if (key === "request_id" && uuid.test(value)) return "<uuid>"
    return value
  }
  if (Array.isArray(value)) return value.map((item) => normalize(item))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, k)]))
  }
  return value
}

/** What must be equal between the two paths' answers. */
const comparable = (answer: Answer, sentRequestId: string | undefined) => {
  const { date: _date, "x-request-id": requestId, etag, ...headers } = answer.headers
  const id = typeof requestId === "string" && requestId !== sentRequestId && uuid.test(requestId) ? "<uuid>" : requestId
  const text = answer.body.toString("utf8")
  let body: unknown = text
  try {
    body = text === "" ? "" : normalize(JSON.parse(text))
  } catch {
    // not JSON: compared as text
  }
  // A CRL's ETag names its signed content, times included: only its presence is compared.
  return {
    status: answer.status,
    statusMessage: answer.statusMessage,
    headerOrder: answer.headerOrder,
    headers: etag === undefined ? headers : { ...headers, etag: "<etag>" },
    requestId: id,
    body
  }
}

/** The same calls on each server, so that both hold the same state (ids included). */
const seed = async (app: TestApp) => {
  const admin = async (method: string, path: string, body?: unknown) => {
    const answer = await app.call(method, path, { body, auth: adminAuth })
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`)
    return answer.body.data
  }
  const client = (path: string, body: unknown, headers?: Record<string, string>) =>
    app.call("POST", path, { body, auth: null, ...(headers === undefined ? {} : { headers }) })
  await admin("POST", "/licenses", { license_key: "GOOD-0000-0000-0001", max_activations: 3 })
  await admin("POST", "/licenses", { license_key: "SMAL-0000-0000-0001", max_activations: 1 })
  await admin("POST", "/licenses", { license_key: "FLOT-0000-0000-0001", max_activations: 2, is_floating: true, lease_duration: 600 })
  await admin("POST", "/licenses", { license_key: "SUSP-0000-0000-0001" })
  await admin("POST", "/licenses/SUSP-0000-0000-0001/suspend")
  await admin("POST", "/licenses", { license_key: "REVK-0000-0000-0001" })
  await admin("POST", "/licenses/REVK-0000-0000-0001/revoke")
  await admin("POST", "/licenses", { license_key: "TERM-0000-0000-0001" })
  await admin("POST", "/licenses/TERM-0000-0000-0001/terminate", { confirm: true })
  await admin("POST", "/licenses", { license_key: "EXPD-0000-0000-0001", expires_at: "2020-01-01T00:00:00Z" })
  await admin("POST", "/licenses", { license_key: "OVER-0000-0000-0001", max_activations: 2 })
  await admin("POST", "/licenses", { license_key: blacklistedKey })
  const plan = await admin("POST", "/policies", { name: "Pro", entitlements: ["export", "sync"] })
  await admin("POST", "/licenses", { license_key: "PLAN-0000-0000-0001", policy_id: plan.id, entitlements: ["beta"], max_activations: 1 })
  await client("/activate", { license_key: "OVER-0000-0000-0001", fingerprint: "over-1" })
  await client("/activate", { license_key: "OVER-0000-0000-0001", fingerprint: "over-2" })
  await admin("PUT", "/licenses/OVER-0000-0000-0001", { max_activations: 1 })
  await client("/activate", { license_key: "GOOD-0000-0000-0001", fingerprint: "revoked-fp" })
  const machines = await admin("GET", "/licenses/GOOD-0000-0000-0001/machines")
  await admin("POST", `/machines/${machines.machines[0].id}/revoke`)
  await client("/activate", { license_key: "FLOT-0000-0000-0001", fingerprint: "gone-fp" })
  await client("/deactivate", { license_key: "FLOT-0000-0000-0001", fingerprint: "gone-fp" })
}

const json = { "content-type": "application/json" }
const key = "GOOD-0000-0000-0001"
const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

/** The corpus, in order (the writes change the state both servers hold alike). */
const corpus = (trustProxy: boolean): ReadonlyArray<Case> => {
  const cases: Array<Case> = []
  const add = (name: string, c: Omit<Case, "name">) => cases.push({ name, ...c })
  const post = (name: string, path: string, body: unknown, headers: Record<string, string> = json) =>
    add(name, { path, body, headers })
  // validate: valid, every code, every field shape
  post("validate", "/validate", { license_key: key })
  post("validate lower case with spaces", "/validate", { license_key: `  ${key.toLowerCase()} ` })
  post("validate with nonce string", "/validate", { license_key: key, nonce: "n-1" })
  post("validate with nonce int", "/validate", { license_key: key, nonce: 42 })
  post("validate with nulls", "/validate", { license_key: key, fingerprint: null, nonce: null })
  post("validate unknown fields", "/validate", { license_key: key, ip_address: "1.2.3.4", extra: { a: [1] } })
  // The common bodies the fast path decodes without the schema (`commonValidatePayload`), and near misses.
  post("validate fingerprint first", "/validate", { fingerprint: "nobody", license_key: key })
  post("validate fingerprint null only", "/validate", { license_key: key, fingerprint: null })
  post("validate fingerprint a number", "/validate", { license_key: key, fingerprint: 7 })
  post("validate fingerprint of 255", "/validate", { license_key: key, fingerprint: "f".repeat(255) })
  post("validate fingerprint with DEL", "/validate", { license_key: key, fingerprint: "a\u007fb" })
  post("validate key an array", "/validate", { license_key: [key] })
  post("validate __proto__ key", "/validate", `{"__proto__":{"fingerprint":"x"},"license_key":"${key}"}`)
  post("validate suspended", "/validate", { license_key: "SUSP-0000-0000-0001" })
  post("validate revoked", "/validate", { license_key: "REVK-0000-0000-0001" })
  post("validate terminated", "/validate", { license_key: "TERM-0000-0000-0001" })
  post("validate expired", "/validate", { license_key: "EXPD-0000-0000-0001" })
  post("validate over the ceiling", "/validate", { license_key: "OVER-0000-0000-0001", fingerprint: "over-1" })
  post("validate blacklisted key", "/validate", { license_key: blacklistedKey })
  post("validate blacklisted fingerprint", "/validate", { license_key: key, fingerprint: "black-fp" })
  post("validate revoked machine", "/validate", { license_key: key, fingerprint: "revoked-fp" })
  post("validate fingerprint not activated", "/validate", { license_key: key, fingerprint: "nobody" })
  post("validate unknown key", "/validate", { license_key: "NONE-0000-0000-0001" })
  // entitlements (CONTRACT §15): held (own and the policy's), missing, after the license checks, before the machine checks
  post("validate entitlements held", "/validate", { license_key: "PLAN-0000-0000-0001", entitlements: ["export", "beta"] })
  post("validate entitlements missing", "/validate", { license_key: "PLAN-0000-0000-0001", entitlements: ["sso", "export", "team"] })
  post("validate entitlements missing before the machine checks", "/validate", { license_key: key, fingerprint: "nobody", entitlements: ["export"] })
  post("validate entitlements after the license checks", "/validate", { license_key: "REVK-0000-0000-0001", entitlements: ["export"] })
  post("validate entitlements empty and null", "/validate", { license_key: key, entitlements: [] })
  post("validate entitlements null", "/validate", { license_key: key, entitlements: null })
  post("validate entitlements not codes", "/validate", { license_key: key, entitlements: ["Export", 3] })
  post("validate entitlements too many", "/validate", { license_key: key, entitlements: Array.from({ length: 65 }, (_, i) => `c${i}`) })
  post("validate malformed key", "/validate", { license_key: "nope" })
  post("validate key a number", "/validate", { license_key: 12 })
  post("validate no key", "/validate", { fingerprint: "x" })
  post("validate empty object", "/validate", {})
  post("validate nonce too long", "/validate", { license_key: key, nonce: "n".repeat(65) })
  post("validate nonce not an integer", "/validate", { license_key: key, nonce: 1.5 })
  post("validate empty fingerprint", "/validate", { license_key: key, fingerprint: "" })
  post("validate control character", "/validate", { license_key: key, fingerprint: "a\u0001b" })
  post("validate long fingerprint", "/validate", { license_key: key, fingerprint: "f".repeat(256) })
  post("validate several bad fields", "/validate", { license_key: 1, fingerprint: 2, nonce: {} })
  post("validate array body", "/validate", [1, 2])
  post("validate string body", "/validate", "\"text\"")
  post("validate null body", "/validate", "null")
  post("validate invalid JSON", "/validate", "{\"license_key\":")
  post("validate whitespace body", "/validate", "   ")
  post("validate BOM", "/validate", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ license_key: key }))]))
  post("validate invalid UTF-8", "/validate", Buffer.from([0x7b, 0x22, 0x6c, 0xff, 0x22, 0x3a, 0x31, 0x7d]))
  post("validate NUL", "/validate", "{\"license_key\":\"GOOD-0000-0000-0001\",\"fingerprint\":\"a\\u0000b\"}")
  post("validate lone surrogate", "/validate", "{\"license_key\":\"GOOD-0000-0000-0001\",\"x\":{\"\\ud800\":1}}")
  post("validate nested 65", "/validate", `{"license_key":"${key}","x":${deep(64)}}`)
  post("validate nested 64", "/validate", `{"license_key":"${key}","x":${deep(63)}}`)
  // content types, lengths, transfer codings
  post("validate text/plain", "/validate", { license_key: key }, { "content-type": "text/plain" })
  post("validate charset", "/validate", { license_key: key }, { "content-type": "application/json; charset=utf-8" })
  post("validate upper-case type", "/validate", { license_key: key }, { "content-type": "APPLICATION/JSON" })
  post("validate no content type", "/validate", { license_key: key }, {})
  post("validate form", "/validate", "license_key=x", { "content-type": "application/x-www-form-urlencoded" })
  add("validate empty body", { path: "/validate", headers: json, body: "" })
  add("validate no body", { path: "/validate", headers: json })
  add("validate over the limit", { path: "/validate", headers: json, body: `{"license_key":"${key}","x":"${"a".repeat(1024 * 1024)}"}` })
  add("validate chunked", { path: "/validate", headers: json, body: { license_key: key }, chunked: true })
  add("validate expect 100-continue", { path: "/validate", headers: json, body: { license_key: key }, expectContinue: true })
  // methods, paths
  add("GET validate", { method: "GET", path: "/validate" })
  add("HEAD validate", { method: "HEAD", path: "/validate" })
  add("OPTIONS validate", { method: "OPTIONS", path: "/validate" })
  add("PUT validate", { method: "PUT", path: "/validate", headers: json, body: { license_key: key } })
  post("validate query string", "/validate?x=1", { license_key: key })
  post("validate trailing slash", "/validate/", { license_key: key })
  post("validate upper-case path", "/VALIDATE", { license_key: key })
  // request ids and other headers
  post("validate own request id", "/validate", { license_key: key }, { ...json, "x-request-id": "client-id_1.2:3@x+y=z" })
  post("validate bad request id", "/validate", { license_key: key }, { ...json, "x-request-id": "has spaces in it" })
  post("validate long request id", "/validate", { license_key: key }, { ...json, "x-request-id": "r".repeat(129) })
  post("validate empty request id", "/validate", { license_key: key }, { ...json, "x-request-id": "" })
  post("validate latin1", "/validate", { license_key: key }, { "content-type": "application/json; charset=latin1" })
  post("validate quoted UTF-8", "/validate", { license_key: key }, { "content-type": `application/json; charset="UTF-8"` })
  post("validate duplicated key", "/validate", `{"license_key":"${key}","license_key":"${key}"}`)
  post("activate duplicated nested key", "/activate", `{"license_key":"${key}","fingerprint":"d","meta":{"a\\u0022":1,"a\\"":2}}`)
  post("validate from a browser", "/validate", { license_key: key }, { ...json, origin: "https://app.example.com" })
  post("validate unknown key from a browser", "/validate", { license_key: "NONE-0000-0000-0001" }, { ...json, origin: "https://app.example.com" })
  post("validate from another origin", "/validate", { license_key: key }, { ...json, origin: "https://other.example.org" })
  post("validate credentials ignored", "/validate", { license_key: key }, { ...json, authorization: "Basic bm9wZTpub3Bl" })
  post("validate forwarded", "/validate", { license_key: key, fingerprint: "nobody" }, { ...json, "x-forwarded-for": "10.9.9.9" })
  post("validate forwarded, two hops", "/validate", { license_key: key }, { ...json, "x-forwarded-for": "1.1.1.1, 10.9.9.9" })
  post("validate forwarded garbage", "/validate", { license_key: key }, { ...json, "x-forwarded-for": "not-an-ip" })
  // activate
  post("activate", "/activate", { license_key: key, fingerprint: "fp-1", name: "n", hostname: "h", platform: "p", app_version: "1.0" })
  post("activate again", "/activate", { license_key: key, fingerprint: "fp-1" })
  post("activate with components and meta", "/activate", {
    license_key: key,
    fingerprint: "fp-2",
    components: [{ kind: "cpu", fingerprint: "c1" }, { kind: "disk", fingerprint: "d1", name: "ssd" }],
    meta: { seat: 2, tags: ["a"] }
  }, trustProxy ? { ...json, "x-forwarded-for": "192.0.2.7" } : json)
  post("activate over the limit", "/activate", { license_key: "SMAL-0000-0000-0001", fingerprint: "s-1" })
  post("activate over the limit 2", "/activate", { license_key: "SMAL-0000-0000-0001", fingerprint: "s-2" })
  post("activate revoked machine", "/activate", { license_key: key, fingerprint: "revoked-fp" })
  post("activate suspended", "/activate", { license_key: "SUSP-0000-0000-0001", fingerprint: "x" })
  post("activate terminated", "/activate", { license_key: "TERM-0000-0000-0001", fingerprint: "x" })
  post("activate expired", "/activate", { license_key: "EXPD-0000-0000-0001", fingerprint: "x" })
  post("activate blacklisted", "/activate", { license_key: blacklistedKey, fingerprint: "x" })
  post("activate blacklisted fingerprint", "/activate", { license_key: key, fingerprint: "black-fp" })
  post("activate unknown key", "/activate", { license_key: "NONE-0000-0000-0001", fingerprint: "x" })
  post("activate no fingerprint", "/activate", { license_key: key })
  post("activate bad component", "/activate", { license_key: key, fingerprint: "x", components: [{ kind: "tpm", fingerprint: "" }] })
  post("activate too many components", "/activate", {
    license_key: key,
    fingerprint: "x",
    components: Array.from({ length: 33 }, (_, i) => ({ kind: "custom", fingerprint: `c${i}` }))
  })
  post("activate long name", "/activate", { license_key: key, fingerprint: "x", name: "n".repeat(256) })
  post("activate big meta", "/activate", { license_key: key, fingerprint: "x", meta: { big: "m".repeat(17 * 1024) } })
  post("activate floating", "/activate", { license_key: "FLOT-0000-0000-0001", fingerprint: "float-1" })
  // heartbeat
  post("heartbeat", "/heartbeat", { license_key: "FLOT-0000-0000-0001", fingerprint: "float-1", app_version: "2.0" })
  post("heartbeat node-locked", "/heartbeat", { license_key: key, fingerprint: "fp-1" })
  post("heartbeat unknown fingerprint", "/heartbeat", { license_key: key, fingerprint: "nobody" })
  post("heartbeat deactivated", "/heartbeat", { license_key: "FLOT-0000-0000-0001", fingerprint: "gone-fp" })
  post("heartbeat revoked", "/heartbeat", { license_key: key, fingerprint: "revoked-fp" })
  post("heartbeat suspended", "/heartbeat", { license_key: "SUSP-0000-0000-0001", fingerprint: "x" })
  post("heartbeat no fingerprint", "/heartbeat", { license_key: key })
  // deactivate
  post("deactivate by fingerprint", "/deactivate", { license_key: key, fingerprint: "fp-1" })
  post("deactivate again", "/deactivate", { license_key: key, fingerprint: "fp-1" })
  post("deactivate by machine id", "/deactivate", { license_key: "FLOT-0000-0000-0001", machine_id: 8 })
  post("deactivate neither", "/deactivate", { license_key: key })
  post("deactivate machine id 0", "/deactivate", { license_key: key, machine_id: 0 })
  post("deactivate unknown", "/deactivate", { license_key: key, fingerprint: "nobody" })
  post("deactivate other license's machine", "/deactivate", { license_key: key, machine_id: 1 })
  post("validate after the writes", "/validate", { license_key: key, fingerprint: "fp-2" })
  // Again, now that the validation cache holds what they read: answered at once on the fast path (no fiber).
  post("validate after the writes, again", "/validate", { license_key: key, fingerprint: "fp-2", nonce: "n-2" })
  post("validate again", "/validate", { license_key: key, nonce: 7 })
  post("validate suspended again", "/validate", { license_key: "SUSP-0000-0000-0001" })
  post("validate expired again", "/validate", { license_key: "EXPD-0000-0000-0001", nonce: "e" })
  post("validate over the ceiling again", "/validate", { license_key: "OVER-0000-0000-0001", fingerprint: "over-1" })
  post("validate blacklisted key again", "/validate", { license_key: blacklistedKey })
  post("validate blacklisted fingerprint again", "/validate", { license_key: key, fingerprint: "black-fp" })
  post("validate revoked machine again", "/validate", { license_key: key, fingerprint: "revoked-fp" })
  post("validate fingerprint not activated again", "/validate", { license_key: key, fingerprint: "nobody" })
  post("validate entitlements held again", "/validate", { license_key: "PLAN-0000-0000-0001", entitlements: ["export", "beta"] })
  post("validate entitlements missing again", "/validate", { license_key: "PLAN-0000-0000-0001", entitlements: ["sso", "export"] })
  post("validate forwarded again", "/validate", { license_key: key, fingerprint: "nobody" }, { ...json, "x-forwarded-for": "10.9.9.9" })
  post("validate unknown key again", "/validate", { license_key: "NONE-0000-0000-0001" })
  post("validate malformed key again", "/validate", { license_key: "nope" })
  return cases
}

const configurations: ReadonlyArray<{ readonly name: string; readonly settings: Partial<Settings> }> = [
  { name: "default settings", settings: {} },
  { name: "LM_REST_ROOT=/wp-json behind one trusted proxy, LM_CORS_ORIGINS set", settings: { restRoot: "/wp-json", trustProxyHops: 1, corsOrigins: ["https://app.example.com"] } }
]

describe.each(configurations)("fast path and Effect stack answer alike: $name", ({ settings }) => {
  let fast: TestApp
  let stack: TestApp
  const options = { signingKey: Redacted.make(signingKey), blacklist: [`key:${blacklistedKey}`, "fp:black-fp", "ip:10.9.9.9"] }

  beforeAll(async () => {
    fast = await startApp("memory", { ...options, settings: { ...settings, fastPath: true } })
    stack = await startApp("memory", { ...options, settings: { ...settings, fastPath: false } })
    await seed(fast)
    await seed(stack)
  }, 60_000)
  afterAll(async () => {
    for (const agent of agents.values()) agent.destroy()
    agents.clear()
    await fast?.close()
    await stack?.close()
  })

  it("gives the same answer to every request of the corpus, and the fast path served the hot routes", async () => {
    const served = (app: TestApp) => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served()))
    const before = await served(fast)
    const trustProxy = (settings.trustProxyHops ?? 0) > 0
    const cases = corpus(trustProxy)
    for (const c of cases) {
      const sentId = c.headers?.["x-request-id"]
      const viaFast = comparable(await send(fast.apiBase, c), sentId)
      const viaStack = comparable(await send(stack.apiBase, c), sentId)
      expect({ case: c.name, ...viaFast }).toEqual({ case: c.name, ...viaStack })
      expect(viaFast.requestId, c.name).toBeDefined()
    }
    const after = await served(fast)
    // Every valid-looking POST with a JSON body of 1 byte to 1 MiB on an exact path goes through the fast path.
    const taken = (path: string) =>
      cases.filter((c) =>
        (c.method ?? "POST") === "POST" && c.path === path && !c.chunked && !c.expectContinue && c.body !== undefined &&
        c.body !== "" && c.name !== "validate over the limit" &&
        /^application\/json/i.test(c.headers?.["content-type"] ?? "") && !/charset=latin1/.test(c.headers?.["content-type"] ?? "")
      ).length
    expect({
      validate: after.validate - before.validate,
      activate: after.activate - before.activate,
      deactivate: after.deactivate - before.deactivate,
      heartbeat: after.heartbeat - before.heartbeat
    }).toEqual({ validate: taken("/validate"), activate: taken("/activate"), deactivate: taken("/deactivate"), heartbeat: taken("/heartbeat") })
    expect(after.validate - before.validate).toBeGreaterThan(40)
    expect(await served(stack)).toEqual({ validate: 0, activate: 0, deactivate: 0, heartbeat: 0 })
    // Most validations were answered without a fiber (the cache warm), the comparison above covering them.
    const atOnce = await fast.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.answeredAtOnce()))
    expect(atOnce).toBeGreaterThan(30)
    // And noted each in the event log as the Effect stack did: as many entries, of the same results.
    const events = (app: TestApp) =>
      app.run(Effect.gen(function*() {
        yield* (yield* ActivityRecorder).flush
        return yield* (yield* Ports.ActivityLog).count({})
      }))
    expect(await events(fast)).toBe(await events(stack))
  }, 120_000)
})

describe.each([
  { name: "an effect only", atOnce: false },
  { name: "with its synchronous form (the fast path's validate answers at once)", atOnce: true }
])("a public guard installed once applies on both paths alike: $name", ({ atOnce }) => {
  /**
   * A guard as a rate limiter would be: per (client IP, license key), two requests, then 429 with a retry
   * delay. Each server gets its own, and records what it saw. With `atOnce` the fast path's also has the
   * synchronous form (`ClientGuard.now`), which lets a request through or, having done nothing, sends it to the
   * effect (here: the third and later requests of a key).
   */
  const limiter = (withNow: boolean) => {
    const seen: Array<string> = []
    const counts = new Map<string, number>()
    const keyOf = (request: ClientGuardRequest) => `${request.clientIp} ${request.licenseKey ?? "-"}`
    const take = (request: ClientGuardRequest) => {
      const key = keyOf(request)
      seen.push(`${request.endpoint} ${key} ${String(request.headers["x-trace"] ?? "")}`)
      const count = (counts.get(key) ?? 0) + 1
      counts.set(key, count)
      return count <= 2
    }
    const effect = (request: ClientGuardRequest) =>
      Effect.suspend(() =>
        take(request) ? Effect.void : Effect.fail(ApiErrors.make(429, "rest_rate_limited", "Too many requests.", { retry_after: 7 }))
      )
    const now = (request: ClientGuardRequest) => (counts.get(keyOf(request)) ?? 0) < 2 && take(request)
    const guard: ClientGuard = withNow ? Object.assign(effect, { now }) : effect
    return { guard, seen }
  }
  const thirdKey = "THRD-0000-0000-0001"
  const fastGuard = limiter(atOnce)
  const stackGuard = limiter(false)
  let fast: TestApp
  let stack: TestApp

  beforeAll(async () => {
    const options = { signingKey: Redacted.make(signingKey) }
    fast = await startApp("memory", { ...options, clientGuards: [fastGuard.guard], settings: { fastPath: true } })
    stack = await startApp("memory", { ...options, clientGuards: [stackGuard.guard], settings: { fastPath: false } })
    for (const app of [fast, stack]) {
      for (const body of [{ license_key: key, max_activations: 3 }, { license_key: "FLOT-0000-0000-0001", is_floating: true, lease_duration: 600 }, { license_key: thirdKey }]) {
        const answer = await app.call("POST", "/licenses", { body, auth: adminAuth })
        expect(answer.status).toBe(201)
      }
    }
  }, 60_000)
  afterAll(async () => {
    for (const agent of agents.values()) agent.destroy()
    agents.clear()
    await fast?.close()
    await stack?.close()
  })

  it("refuses the same requests with the same 429, on every client route, with the fast path on and off", async () => {
    const floating = "FLOT-0000-0000-0001"
    const cases: ReadonlyArray<Case & { readonly status: number }> = [
      { name: "validate", path: "/validate", headers: { ...json, "x-trace": "t1" }, body: { license_key: key }, status: 200 },
      { name: "activate", path: "/activate", headers: json, body: { license_key: key, fingerprint: "fp-1" }, status: 201 },
      { name: "heartbeat over the limit", path: "/heartbeat", headers: json, body: { license_key: key, fingerprint: "fp-1" }, status: 429 },
      { name: "deactivate over the limit", path: "/deactivate", headers: json, body: { license_key: key, fingerprint: "fp-1" }, status: 429 },
      { name: "validate over the limit", path: "/validate", headers: json, body: { license_key: key }, status: 429 },
      { name: "another key", path: "/activate", headers: json, body: { license_key: floating, fingerprint: "f-1" }, status: 201 },
      { name: "another key, heartbeat", path: "/heartbeat", headers: json, body: { license_key: floating, fingerprint: "f-1" }, status: 200 },
      { name: "a body the guard never sees", path: "/validate", headers: json, body: { license_key: 12 }, status: 400 },
      { name: "crl", method: "GET", path: "/crl", status: 200 },
      { name: "public-key", method: "GET", path: "/public-key", status: 200 },
      { name: "public-keyk over the limit", method: "GET", path: "/public-keyk", status: 429 },
      { name: "crl over the limit", method: "GET", path: "/crl", headers: { "if-none-match": "*" }, status: 429 }
    ]
    for (const c of cases) {
      const viaFast = comparable(await send(fast.apiBase, c), undefined)
      const viaStack = comparable(await send(stack.apiBase, c), undefined)
      expect({ case: c.name, ...viaFast }).toEqual({ case: c.name, ...viaStack })
      expect(viaFast.status, c.name).toBe(c.status)
      if (c.status === 429) {
        expect(viaFast.headers["retry-after"], c.name).toBe("7")
        expect(viaFast.body, c.name).toEqual({ success: false, code: "rest_rate_limited", message: "Too many requests.", data: { retry_after: 7, status: 429 } })
      }
    }
    // Each guard ran once per request that reached the pipeline, and saw the same requests.
    expect(fastGuard.seen).toEqual(stackGuard.seen)
    expect(fastGuard.seen).toHaveLength(cases.length - 1)
    expect(fastGuard.seen[0]).toBe(`validate 127.0.0.1 ${key} t1`)
    expect(fastGuard.seen.at(-1)).toBe("crl 127.0.0.1 - ")
    const served = await fast.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served()))
    expect(served).toEqual({ validate: 3, activate: 2, deactivate: 1, heartbeat: 2 })
    // A third key, validated three times: the first loads the validation cache (the guard passed at once, the
    // answer on a fiber), the second is answered at once when the guard can, the third refused by the guard.
    const third: Case = { name: "validate a third key", path: "/validate", headers: { ...json, "x-trace": "t2" }, body: { license_key: thirdKey } }
    for (const round of [1, 2, 3]) {
      const viaFast = comparable(await send(fast.apiBase, third), undefined)
      const viaStack = comparable(await send(stack.apiBase, third), undefined)
      expect({ round, ...viaFast }).toEqual({ round, ...viaStack })
      expect(viaFast.status).toBe(round <= 2 ? 200 : 429)
    }
    // Each request taken once by the guard, whichever form took it.
    expect(fastGuard.seen).toEqual(stackGuard.seen)
    expect(fastGuard.seen.filter((line) => line.includes(thirdKey))).toHaveLength(3)
    const atOnceCount = await fast.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.answeredAtOnce()))
    expect(atOnceCount).toBe(atOnce ? 1 : 0)
  })
})

/** Polls `check` every 10 ms until it holds (at most 5 s). */
const until = async (what: string, check: () => Promise<boolean>) => {
  const deadline = Date.now() + 5_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** How the license reads of the faulty store behave: as the memory store, unreachable, or dying. */
let storeMode: "up" | "down" | "defect" | "slow" = "up"
/** What the faulty store did, in order (slow reads, closing). */
const storeEvents: Array<string> = []

/** A repository whose every call fails on demand (`storeMode`). */
const faulty = <S extends object>(real: S): S =>
  new Proxy(real, {
    get: (target, name) => {
      const value = Reflect.get(target, name, target)
      if (typeof value !== "function") return value
      return (...args: Array<unknown>) =>
        storeMode === "down"
          ? Effect.fail(new Errors.StorageUnavailable({ message: "the store is unreachable" }))
          : storeMode === "defect"
          ? Effect.die(new Error("a bug in the store"))
          : storeMode === "slow"
          ? Effect.delay(Effect.suspend(() => value.apply(target, args)), "300 millis").pipe(
            Effect.tap(() => Effect.sync(() => storeEvents.push("store read")))
          )
          : value.apply(target, args)
    }
  })

/** The memory store with its license and machine repositories failing on demand. */
const faultyStore = () =>
  Layer.mergeAll(
    Layer.effect(Ports.LicenseRepository, Effect.map(Effect.service(Ports.LicenseRepository), faulty)),
    Layer.effect(Ports.MachineRepository, Effect.map(Effect.service(Ports.MachineRepository), faulty))
  ).pipe(Layer.provideMerge(MemoryStore.layer))

describe("fast path and Effect stack answer alike when the store is down or dies", () => {
  let fast: TestApp
  let stack: TestApp

  beforeAll(async () => {
    const options = { signingKey: Redacted.make(signingKey) }
    fast = await startApp("memory", { ...options, storeLayer: faultyStore(), settings: { fastPath: true } })
    stack = await startApp("memory", { ...options, storeLayer: faultyStore(), settings: { fastPath: false } })
    await seed(fast)
    await seed(stack)
  }, 60_000)
  afterAll(async () => {
    storeMode = "up"
    for (const agent of agents.values()) agent.destroy()
    agents.clear()
    await fast?.close()
    await stack?.close()
  })

  it.each(["down", "defect"] as const)("store %s: 503 with Retry-After, or 500 with the request id", async (mode) => {
    const served = (app: TestApp) => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served()))
    const before = await served(fast)
    const cases: ReadonlyArray<Case> = [
      // Keys not validated before: the validation cache has nothing for them and reads the store.
      { name: "validate", path: "/validate", headers: json, body: { license_key: "SUSP-0000-0000-0001" } },
      { name: "validate with id", path: "/validate", headers: { ...json, "x-request-id": "trace-1" }, body: { license_key: "REVK-0000-0000-0001" } },
      { name: "activate", path: "/activate", headers: json, body: { license_key: "SMAL-0000-0000-0001", fingerprint: "x" } },
      { name: "heartbeat", path: "/heartbeat", headers: json, body: { license_key: "FLOT-0000-0000-0001", fingerprint: "x" } },
      { name: "deactivate", path: "/deactivate", headers: { ...json, "x-request-id": "trace-2" }, body: { license_key: key, fingerprint: "x" } }
    ]
    storeMode = mode
    try {
      for (const c of cases) {
        const sentId = c.headers?.["x-request-id"]
        const viaFast = comparable(await send(fast.apiBase, c), sentId)
        const viaStack = comparable(await send(stack.apiBase, c), sentId)
        expect({ case: c.name, ...viaFast }).toEqual({ case: c.name, ...viaStack })
        expect(viaFast.status, c.name).toBe(mode === "down" ? 503 : 500)
        if (mode === "down") expect(viaFast.headers["retry-after"], c.name).toBeDefined()
        else expect((viaFast.body as any).data.request_id, c.name).toBe(sentId ?? "<uuid>")
      }
    } finally {
      storeMode = "up"
    }
    const after = await served(fast)
    expect(after.validate + after.activate + after.heartbeat + after.deactivate)
      .toBe(before.validate + before.activate + before.heartbeat + before.deactivate + cases.length)
  })
})

describe("shutdown with a request in flight on the fast path", () => {
  it("answers it before the engine and the store close", async () => {
    const events = storeEvents
    const store = Layer.effectDiscard(Effect.addFinalizer(() => Effect.sync(() => events.push("store closed")))).pipe(
      Layer.provideMerge(faultyStore())
    )
    const app = await startApp("memory", { storeLayer: store, settings: { fastPath: true } })
    try {
      await app.call("POST", "/licenses", { body: { license_key: key }, auth: adminAuth })
      storeMode = "slow"
      const inFlight = send(app.apiBase, { name: "slow validate", path: "/validate", headers: json, body: { license_key: key }, fresh: true })
      await until("the request in flight", () => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.inFlight() === 1)))
      const served = await app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served()))
      expect(served.validate).toBe(1)
      await app.close()
      events.push("closed")
      const answer = await inFlight
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body.toString("utf8")).data.valid).toBe(true)
      // The slow reads of the request (license, machines) all came before the store closed.
      expect(events.filter((e) => e !== "store read")).toEqual(["store closed", "closed"])
      expect(events.indexOf("store read")).toBe(0)
      expect(events.lastIndexOf("store read")).toBeLessThan(events.indexOf("store closed"))
    } finally {
      storeMode = "up"
    }
  })
})

describe("a client that goes away on the fast path", () => {
  it("interrupts its request: the fiber ends, the store is not read, nothing leaks", async () => {
    const app = await startApp("memory", { storeLayer: faultyStore(), settings: { fastPath: true } })
    const fastPath = () => app.run(Effect.service(FastPath))
    try {
      await app.call("POST", "/licenses", { body: { license_key: key }, auth: adminAuth })
      storeEvents.length = 0
      storeMode = "slow"
      const url = new URL(`${app.apiBase}/validate`)
      const body = JSON.stringify({ license_key: key })
      const req = httpRequest(url, {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
      })
      req.on("error", () => {})
      req.end(body)
      await until("the request in flight", async () => (await fastPath()).inFlight() === 1)
      req.destroy()
      // Its fiber ends without the store having answered it (a read takes 300 ms once started).
      await until("the request's fiber to end", async () => (await fastPath()).inFlight() === 0)
      expect((await fastPath()).served().validate).toBe(1)
      expect(storeEvents).toEqual([])
    } finally {
      storeMode = "up"
      await app.close()
    }
  })
})

describe("the fast path's shortcuts give exactly what they stand for", () => {
  const decode = Schema.decodeUnknownResult(ValidatePayload)

  it("decodes the two common validate bodies as the payload schema does, and leaves every other body to it", () => {
    const common: ReadonlyArray<unknown> = [
      { license_key: key },
      { license_key: "  any text  " },
      { license_key: "" },
      { license_key: key, fingerprint: null },
      { license_key: key, fingerprint: "fp" },
      { fingerprint: "fp", license_key: key },
      { license_key: key, fingerprint: "f".repeat(255) },
      { license_key: key, fingerprint: "\u00a0é 漢字 \ud83d\ude00" }
    ]
    const others: ReadonlyArray<unknown> = [
      null, 1, "text", [], [key], {}, { license_key: 1 }, { license_key: null }, { license_key: [key] },
      { license_key: key, fingerprint: "" }, { license_key: key, fingerprint: "f".repeat(256) },
      { license_key: key, fingerprint: "a\u0000b" }, { license_key: key, fingerprint: "a\u007fb" },
      { license_key: key, fingerprint: "a\u009fb" }, { license_key: key, fingerprint: 3 },
      { license_key: key, nonce: "n" }, { license_key: key, fingerprint: "fp", nonce: 1 }, { license_key: key, extra: 1 },
      { license_key: key, entitlements: null }, { fingerprint: "fp" },
      JSON.parse(`{"__proto__":{"fingerprint":"x"},"license_key":"${key}"}`),
      JSON.parse(`{"license_key":"${key}","__proto__":null}`)
    ]
    for (const input of common) {
      const schema = decode(input)
      expect(Result.isSuccess(schema), JSON.stringify(input)).toBe(true)
      expect(commonValidatePayload(input), JSON.stringify(input)).toStrictEqual(Result.getOrThrow(schema))
    }
    for (const input of others) {
      const shortcut = commonValidatePayload(input)
      // Not a common body: the schema decodes it (or refuses it); a shortcut's answer would have to be the same.
      if (shortcut !== undefined) expect(shortcut).toStrictEqual(Result.getOrThrow(decode(input)))
    }
    expect(others.filter((input) => commonValidatePayload(input) !== undefined)).toEqual([])
  })

  it("writes the answer's server time as Date#toISOString does, within a second and across seconds", () => {
    const times = [0, 1, 999, 1000, 1001, 59_999, 60_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2024, 2, 1),
      Date.UTC(2026, 10, 28, 1, 2, 3, 4), Date.UTC(2026, 10, 28, 1, 2, 3, 45), Date.UTC(2026, 10, 28, 1, 2, 3, 456),
      253_402_300_799_999, 253_402_300_800_000, -1, -1001, 1.5, Date.now()]
    let t = Date.UTC(2026, 10, 28)
    for (let i = 0; i < 2000; i++) times.push(t += (i * 7919) % 1500)
    for (const millis of [...times, ...times.reverse()]) expect(isoNow(millis)).toBe(new Date(millis).toISOString())
    expect(() => isoNow(Number.NaN)).toThrow(RangeError)
  })

  it("writes validate's answer as the JSON text of its object, byte for byte, as the license and its seats change", () => {
    const license = makeLicense({ key, maxActivations: 3, meta: { note: "a \"quoted\" \u2028 ünïcode 😀" }, entitlements: ["beta"] })
    const machine = makeMachine({ fingerprint: "fp \"1\"", name: "Büro", meta: { n: 1 } })
    const validation = (patch: Partial<Validation.Validation>): Validation.Validation => ({
      valid: true,
      code: "valid",
      status: "active",
      machine: null,
      needsActivation: false,
      seatsHeld: 1,
      ceiling: 3,
      entitlements: ["beta"],
      missing: [],
      ...patch
    })
    const result = (v: Validation.Validation, l = license): Services.ValidateResult => ({
      license: l,
      validation: v,
      now: Date.UTC(2026, 10, 28, 1, 2, 3, 456),
      signedPayload: v.valid ? "eyJ2IjoxfQ.c2ln" : null,
      signedRefusal: v.valid ? null : "eyJ2IjoyfQ.cmVm"
    })
    const cases: ReadonlyArray<[Services.ValidateResult, string | number | null]> = [
      [result(validation({})), null],
      [result(validation({})), "n-1"],
      [result(validation({})), 42],
      [result(validation({ seatsHeld: 2 })), null],
      [result(validation({ machine, needsActivation: false })), "x\"y"],
      [result(validation({ needsActivation: true })), null],
      [result(validation({ status: "expired", valid: false, code: "license_expired" })), null],
      [result(validation({ valid: false, code: "entitlements_missing", missing: ["sso", "team"] })), 0],
      [result(validation({ entitlements: ["beta", "export"] })), null],
      [result(validation({}), makeLicense({ key, maxActivations: 5 })), null],
      [result(validation({})), null]
    ]
    for (const [r, nonce] of cases) {
      expect(validateText(r, nonce)).toBe(JSON.stringify(ok(validateAnswer(r, nonce, identity, machineToWire))))
    }
  })
})
