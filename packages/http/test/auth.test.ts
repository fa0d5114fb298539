/**
 * API-key authentication over real HTTP: the credential × scope × method matrix, the IP allow-list guard,
 * `X-Forwarded-For` only behind a trusted proxy, and guards an embedder adds.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiErrors } from "@lm/api"
import { parseIpAllowList } from "../src/server/ClientIp.js"
import type { RestRequestGuard } from "../src/server/Guards.js"
import { basic, type RunningServer, startEchoServer, testKeys } from "./support/TestServer.js"

const json = { "content-type": "application/json" }

const get = (server: RunningServer, authorization?: string, extra: Record<string, string> = {}) =>
  fetch(server.apiBase + "/admin/echo", { headers: { ...extra, ...(authorization === undefined ? {} : { authorization }) } })

const post = (server: RunningServer, authorization?: string, extra: Record<string, string> = {}) =>
  fetch(server.apiBase + "/admin/echo", {
    method: "POST",
    headers: { ...json, ...extra, ...(authorization === undefined ? {} : { authorization }) },
    body: JSON.stringify({ description: "from the test" })
  })

/** Status, code and the checks every response must pass. */
const outcome = async (response: Response) => {
  const body: any = await response.json()
  expect(response.headers.get("x-request-id")).toMatch(/\S/)
  if (!body.success) {
    expect(body.data.status).toBe(response.status)
    if (response.status === 401) expect(response.headers.get("www-authenticate")).toBe(`Basic realm="lm"`)
  }
  return { status: response.status, code: body.success ? "ok" : body.code, body }
}

describe("credentials and scopes", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startEchoServer({ logs: [] })
  })
  afterAll(() => server.close())

  const { read, write, read_write } = testKeys
  const cases: ReadonlyArray<readonly [string, string | undefined, string, string]> = [
    ["no credentials", undefined, "rest_unauthorized", "rest_unauthorized"],
    ["a bad secret", basic(read_write.consumerKey, `cs_${"0".repeat(40)}`), "rest_unauthorized", "rest_unauthorized"],
    ["an unknown key", basic(`ck_${"f".repeat(40)}`, read_write.consumerSecret), "rest_unauthorized", "rest_unauthorized"],
    ["a malformed key", basic("admin", "admin"), "rest_unauthorized", "rest_unauthorized"],
    ["upper-case hex", basic(read_write.consumerKey.toUpperCase(), read_write.consumerSecret), "rest_unauthorized", "rest_unauthorized"],
    ["not Basic at all", `Bearer ${read_write.consumerSecret}`, "rest_unauthorized", "rest_unauthorized"],
    ["a read key", basic(read.consumerKey, read.consumerSecret), "ok", "rest_forbidden"],
    ["a write key", basic(write.consumerKey, write.consumerSecret), "rest_forbidden", "ok"],
    ["a read_write key", basic(read_write.consumerKey, read_write.consumerSecret), "ok", "ok"]
  ]

  for (const [name, authorization, onGet, onPost] of cases) {
    it(`with ${name}: GET is ${onGet}, POST is ${onPost}`, async () => {
      const g = await outcome(await get(server, authorization))
      const p = await outcome(await post(server, authorization))
      expect([g.code, p.code]).toEqual([onGet, onPost])
      const statusOf = (code: string) => code === "ok" ? 200 : code === "rest_unauthorized" ? 401 : 403
      expect([g.status, p.status]).toEqual([statusOf(onGet), statusOf(onPost)])
    })
  }

  it("gives the handler the authenticated key", async () => {
    const result = await outcome(await post(server, basic(write.consumerKey, write.consumerSecret)))
    expect(result.body.data).toEqual({ key_id: write.id, description: "from the test" })
  })

  it("treats OPTIONS as a read: a read or read_write key passes, a write key is 403, no credentials 401", async () => {
    const options = (authorization?: string) =>
      fetch(server.apiBase + "/admin/probe", { method: "OPTIONS", headers: authorization === undefined ? {} : { authorization } })
    const answers = []
    for (const key of [undefined, read, write, read_write]) {
      const { status, code } = await outcome(await options(key === undefined ? undefined : basic(key.consumerKey, key.consumerSecret)))
      answers.push([status, code])
    }
    expect(answers).toEqual([[401, "rest_unauthorized"], [200, "ok"], [403, "rest_forbidden"], [200, "ok"]])
  })

  it("does not ask public routes for credentials, and ignores credentials sent to them", async () => {
    expect((await fetch(server.apiBase + "/health")).status).toBe(200)
    const bad = await fetch(server.apiBase + "/health", { headers: { authorization: basic("nobody", "nothing") } })
    expect(bad.status).toBe(200)
  })
})

describe("IP allow-list (LM_ADMIN_ALLOWED_IPS)", () => {
  const key = basic(testKeys.read_write.consumerKey, testKeys.read_write.consumerSecret)

  it("lets a listed address through and vetoes others with 403 rest_forbidden", async () => {
    const allowed = await startEchoServer({ settings: { adminAllowedIps: parseIpAllowList("10.0.0.0/8, 127.0.0.0/8") }, logs: [] })
    const denied = await startEchoServer({ settings: { adminAllowedIps: parseIpAllowList("10.0.0.0/8, 2001:db8::/32") }, logs: [] })
    try {
      expect((await outcome(await get(allowed, key))).code).toBe("ok")
      const veto = await outcome(await get(denied, key))
      expect([veto.status, veto.code]).toEqual([403, "rest_forbidden"])
      // authentication still comes first
      expect((await outcome(await get(denied))).code).toBe("rest_unauthorized")
      // public routes are not behind the allow-list
      expect((await fetch(denied.apiBase + "/health")).status).toBe(200)
    } finally {
      await allowed.close()
      await denied.close()
    }
  })

  it("ignores X-Forwarded-For unless LM_TRUST_PROXY is set", async () => {
    const list = parseIpAllowList("203.0.113.7")
    const direct = await startEchoServer({ settings: { adminAllowedIps: list }, logs: [] })
    const proxied = await startEchoServer({ settings: { adminAllowedIps: list, trustProxyHops: 1 }, logs: [] })
    try {
      const spoofed = { "x-forwarded-for": "203.0.113.7" }
      expect((await outcome(await get(direct, key, spoofed))).code).toBe("rest_forbidden")
      expect((await outcome(await get(proxied, key, spoofed))).code).toBe("ok")
      // behind one proxy, the client is the entry the proxy appended, not one the client wrote
      const prepended = { "x-forwarded-for": "203.0.113.7, 198.51.100.1" }
      expect((await outcome(await get(proxied, key, prepended))).code).toBe("rest_forbidden")
    } finally {
      await direct.close()
      await proxied.close()
    }
  })
})

describe("restRequestValid guards added by an embedder", () => {
  it("run after the scope check, see the request, and can veto or fail with their own error", async () => {
    const seen: Array<{ allowed: boolean; scope: string; method: string; ip: string | undefined }> = []
    const recorder: RestRequestGuard = (allowed, request, scope) =>
      Effect.sync(() => {
        seen.push({ allowed, scope, method: request.http.method, ip: request.clientIp })
        return allowed
      })
    const noDeletes: RestRequestGuard = (allowed, request) =>
      Effect.succeed(allowed && request.http.headers["x-test-veto"] === undefined)
    const limiter: RestRequestGuard = (allowed, request) =>
      request.http.headers["x-test-limit"] === undefined
        ? Effect.succeed(allowed)
        : Effect.fail(ApiErrors.make(429, "rest_rate_limited", "Too many requests.", { retry_after: 7 }))
    const server = await startEchoServer({ guards: [recorder, noDeletes, limiter], logs: [] })
    const key = basic(testKeys.read.consumerKey, testKeys.read.consumerSecret)
    try {
      expect((await outcome(await get(server, key))).code).toBe("ok")
      expect(seen).toEqual([{ allowed: true, scope: "read", method: "GET", ip: "127.0.0.1" }])
      expect((await outcome(await get(server, key, { "x-test-veto": "1" }))).code).toBe("rest_forbidden")
      const limited = await get(server, key, { "x-test-limit": "1" })
      expect(limited.headers.get("retry-after")).toBe("7")
      const body = await outcome(limited)
      expect([body.status, body.code, body.body.data.retry_after]).toEqual([429, "rest_rate_limited", 7])
      // a request refused by its scope never reaches the guards
      await post(server, key)
      expect(seen).toHaveLength(3)
    } finally {
      await server.close()
    }
  })
})

describe("an authenticator that cannot reach the store", () => {
  it("answers 503 service_unavailable with Retry-After, not 401", async () => {
    const server = await startEchoServer({
      authenticator: {
        authenticate: () => Effect.fail({ code: "service_unavailable", status: 503, message: "The store cannot be reached." })
      },
      logs: []
    })
    try {
      const response = await get(server, basic(testKeys.read.consumerKey, testKeys.read.consumerSecret))
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/)
      const result = await outcome(response)
      expect([result.status, result.code]).toEqual([503, "service_unavailable"])
    } finally {
      await server.close()
    }
  })
})
