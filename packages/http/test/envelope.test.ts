/**
 * Every error path of the adapter, over real HTTP: each answers the contract's envelope with
 * HTTP status == data.status and an X-Request-Id.
 */
import { Readable } from "node:stream"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { basic, type CapturedLog, type RunningServer, startEchoServer, testKeys } from "./support/TestServer.js"

let server: RunningServer
const logs: Array<CapturedLog> = []

beforeAll(async () => {
  server = await startEchoServer({ logs })
})
afterAll(() => server.close())

const json = { "content-type": "application/json" }

/** Fetches and checks what every response must have; returns status, headers and the parsed body. */
const call = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(server.apiBase + path, init)
  const text = await response.text()
  const body = text === "" ? undefined : JSON.parse(text)
  expect(response.headers.get("x-request-id")).toMatch(/\S/)
  return { status: response.status, headers: response.headers, body }
}

/** Checks the error envelope shape and that the HTTP status equals data.status. */
const expectEnvelope = (result: { status: number; body: any }, status: number, code: string) => {
  expect(result.status).toBe(status)
  expect(result.body).toMatchObject({ success: false, code, data: { status } })
  expect(typeof result.body.message).toBe("string")
  expect(Object.keys(result.body).sort()).toEqual(["code", "data", "message", "success"])
}

describe("routing", () => {
  it("answers an unknown path with 404 rest_no_route, with or without credentials", async () => {
    expectEnvelope(await call("/no/such/route"), 404, "rest_no_route")
    const key = testKeys.read_write
    const withKey = await call("/no/such/route", { headers: { authorization: basic(key.consumerKey, key.consumerSecret) } })
    expectEnvelope(withKey, 404, "rest_no_route")
    expectEnvelope(await fetchOutsideApi("/elsewhere"), 404, "rest_no_route")
  })

  it("answers a known path with another method with 405 and Allow", async () => {
    const result = await call("/health", { method: "DELETE" })
    expectEnvelope(result, 405, "rest_method_not_allowed")
    expect(result.headers.get("allow")).toBe("GET, HEAD")
    const post = await call("/admin/echo", { method: "PUT" })
    expectEnvelope(post, 405, "rest_method_not_allowed")
    expect(post.headers.get("allow")).toBe("GET, HEAD, POST")
  })

  it("routes before authenticating: a known management route without credentials is 401", async () => {
    const result = await call("/admin/echo")
    expectEnvelope(result, 401, "rest_unauthorized")
  })
})

/** A request outside `{rest_root}/lm/v1` (the server's origin). */
const fetchOutsideApi = async (path: string) => {
  const response = await fetch(server.origin + path)
  expect(response.headers.get("x-request-id")).toMatch(/\S/)
  return { status: response.status, body: await response.json() }
}

describe("request bodies", () => {
  it("answers malformed JSON with 400 rest_invalid_json", async () => {
    expectEnvelope(await call("/echo", { method: "POST", headers: json, body: "{\"license_key\": " }), 400, "rest_invalid_json")
  })

  it("names each bad field in data.params", async () => {
    const result = await call("/echo", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ fingerprint: "", count: 0 })
    })
    expectEnvelope(result, 400, "rest_invalid_param")
    expect(result.body.data.params).toEqual({
      license_key: "is required",
      fingerprint: expect.stringMatching(/^must be .*1 and 255/),
      count: expect.stringMatching(/^must be .*1/)
    })
  })

  it("uses a schema's own message for a field", async () => {
    const result = await call("/echo", { method: "POST", headers: json, body: JSON.stringify({ license_key: "nope" }) })
    expectEnvelope(result, 400, "rest_invalid_param")
    expect(result.body.data.params).toEqual({ license_key: "is not a license key" })
  })

  it("reports a body that is not an object under `body`", async () => {
    const result = await call("/echo", { method: "POST", headers: json, body: "[1, 2]" })
    expectEnvelope(result, 400, "rest_invalid_param")
    expect(result.body.data.params).toEqual({ body: "must be an object" })
  })

  it("reports bad query parameters by name", async () => {
    const result = await call("/echo/list?page=abc")
    expectEnvelope(result, 400, "rest_invalid_param")
    expect(Object.keys(result.body.data.params)).toEqual(["page"])
  })

  it("ignores unknown fields on a public route but rejects them on a management write", async () => {
    const ok = await call("/echo", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ license_key: "ABCD-EFGH-IJKL-MNOP", ip_address: "6.6.6.6" })
    })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ success: true, data: { license_key: "ABCD-EFGH-IJKL-MNOP" }, meta: {} })
    const key = testKeys.write
    const strict = await call("/admin/echo", {
      method: "POST",
      headers: { ...json, authorization: basic(key.consumerKey, key.consumerSecret) },
      body: JSON.stringify({ description: "x", bogus: 1 })
    })
    expectEnvelope(strict, 400, "rest_invalid_param")
    expect(strict.body.data.params).toEqual({ bogus: "is not allowed" })
  })

  it("reads no body, or an empty JSON body, on a POST as {}", async () => {
    const none = await call("/echo/touch", { method: "POST" })
    expect(none.status).toBe(200)
    expect(none.body).toEqual({ success: true, data: { note: null, request_id: none.headers.get("x-request-id") }, meta: {} })
    const empty = await call("/echo/touch", { method: "POST", headers: json, body: "" })
    expect(empty.status).toBe(200)
    // {} reaches the schema, so a required field is reported as missing rather than the body as invalid
    const required = await call("/echo", { method: "POST" })
    expectEnvelope(required, 400, "rest_invalid_param")
    expect(required.body.data.params).toEqual({ license_key: "is required" })
  })

  it("answers a non-JSON content type with 415", async () => {
    const result = await call("/echo", { method: "POST", headers: { "content-type": "text/plain" }, body: "hello" })
    expectEnvelope(result, 415, "rest_unsupported_media_type")
  })

  it("accepts JSON with a charset parameter", async () => {
    const result = await call("/echo", {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ license_key: "ABCD-EFGH-IJKL-MNOP" })
    })
    expect(result.status).toBe(200)
  })

  it("answers a 2 MiB body with 413 without reading it (Content-Length)", async () => {
    const result = await call("/echo", { method: "POST", headers: json, body: "x".repeat(2 * 1024 * 1024) })
    expectEnvelope(result, 413, "rest_payload_too_large")
  })

  it("reads a chunked body (no Content-Length), and an empty chunked body as {}", async () => {
    const body = await chunkedPost("/echo", ["{\"license_key\":", "\"ABCD-EFGH-IJKL-MNOP\"}"])
    expect(body.status).toBe(200)
    expect(body.body.data).toEqual({ license_key: "ABCD-EFGH-IJKL-MNOP" })
    const empty = await chunkedPost("/echo/touch", [])
    expect(empty.status).toBe(200)
  })

  it("answers a 2 MiB chunked body with 413, stopping at the limit", async () => {
    const chunk = "x".repeat(64 * 1024)
    const chunks = ["{\"license_key\":\"", ...Array.from({ length: 32 }, () => chunk), "\"}"]
    const result = await chunkedPost("/echo", chunks)
    expect(result.requestId).toMatch(/\S/)
    expectEnvelope(result, 413, "rest_payload_too_large")
  })
})

/** POSTs JSON with `Transfer-Encoding: chunked`, one chunk per string. */
const chunkedPost = (path: string, chunks: ReadonlyArray<string>) =>
  new Promise<{ status: number; body: any; requestId: string | undefined }>((resolve, reject) => {
    const req = httpRequest(new URL(server.apiBase + path), {
      method: "POST",
      headers: { ...json, "transfer-encoding": "chunked" }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (part) => text += part)
      res.on("end", () =>
        resolve({ status: res.statusCode!, body: JSON.parse(text), requestId: res.headers["x-request-id"] as string | undefined })
      )
    })
    req.on("error", reject)
    Readable.from(chunks).pipe(req)
  })

describe("errors from handlers", () => {
  it("maps a domain error to its code and status, its extra fields to data", async () => {
    const result = await call("/echo/transition", { method: "POST" })
    expectEnvelope(result, 409, "invalid_transition")
    expect(result.body.data).toEqual({ status: 409, from: "active", action: "reinstate" })
    expect(result.body.message).toBe("Cannot reinstate a license that is active.")
  })

  it("answers an unreachable store with 503 service_unavailable and Retry-After", async () => {
    const result = await call("/echo/unavailable")
    expectEnvelope(result, 503, "service_unavailable")
    expect(Number(result.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(result.body.data.retry_after).toBe(Number(result.headers.get("retry-after")))
  })

  it("answers a defect with 500 internal_error, no internals, and logs the cause under the request id", async () => {
    const result = await call("/echo/defect?license_key=SECRET-KEY&token=t0k3n")
    expectEnvelope(result, 500, "internal_error")
    const requestId = result.headers.get("x-request-id")!
    expect(result.body.data).toEqual({ status: 500, request_id: requestId })
    expect(JSON.stringify(result.body)).not.toMatch(/secret|postgres|Error/)
    const logged = logs.find((log) => log.annotations.request_id === requestId)
    expect(logged?.level).toBe("Error")
    expect(logged?.cause).toContain("secret internals")
    // The path is logged, never the query (a license key, a download token).
    expect(String(logged?.annotations.url)).toMatch(/\/echo\/defect$/)
    expect(JSON.stringify(logged?.annotations)).not.toMatch(/SECRET-KEY|t0k3n/)
  })
})

describe("X-Request-Id", () => {
  it("is the id handlers see (currentRequestId)", async () => {
    const result = await call("/echo/touch", { method: "POST", headers: { ...json, "x-request-id": "trace-7" }, body: "{}" })
    expect(result.headers.get("x-request-id")).toBe("trace-7")
    expect(result.body.data.request_id).toBe("trace-7")
  })

  it("reuses a sane incoming id and replaces an unusable one", async () => {
    const reused = await fetch(server.apiBase + "/health", { headers: { "x-request-id": "client-req.42" } })
    expect(reused.headers.get("x-request-id")).toBe("client-req.42")
    const replaced = await fetch(server.apiBase + "/health", { headers: { "x-request-id": "a b <script>" } })
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const other = await fetch(server.apiBase + "/health")
    expect(other.headers.get("x-request-id")).not.toBe(replaced.headers.get("x-request-id"))
  })
})

describe("health and openapi.json", () => {
  it("reports health in the success envelope", async () => {
    const result = await call("/health")
    expect(result.status).toBe(200)
    expect(result.body).toEqual({ success: true, data: { status: "ok", storage: "memory", version: "0.1.0" }, meta: {} })
  })

  it("answers 503 when the store's check fails", async () => {
    const down = await startEchoServer({
      storage: { storage: "postgres", check: Effect.fail(new Error("connect ECONNREFUSED 127.0.0.1:5432")) },
      logs: []
    })
    try {
      const response = await fetch(down.apiBase + "/health")
      const body = await response.json()
      expect(response.status).toBe(503)
      expect(body).toMatchObject({ success: false, code: "service_unavailable", data: { status: 503 } })
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/)
    } finally {
      await down.close()
    }
  })

  it("serves the bare OpenAPI 3.1 document with paths under the rest root and the Basic scheme", async () => {
    const response = await fetch(server.apiBase + "/openapi.json")
    expect(response.status).toBe(200)
    const document: any = await response.json()
    expect(document.openapi).toBe("3.1.0")
    expect(document.success).toBeUndefined()
    expect(Object.keys(document.paths)).toContain("/api/lm/v1/health")
    expect(Object.keys(document.paths)).toContain("/api/lm/v1/admin/echo")
    expect(JSON.stringify(document.components.securitySchemes)).toContain("basic")
    expect(document.paths["/api/lm/v1/echo"].post.security).toEqual([])
    expect(document.paths["/api/lm/v1/admin/echo"].get.security.length).toBeGreaterThan(0)
  })

  it("mounts everything under LM_REST_ROOT", async () => {
    const wp = await startEchoServer({ settings: { restRoot: "/wp-json" }, logs: [] })
    try {
      expect(wp.apiBase).toMatch(/\/wp-json\/lm\/v1$/)
      expect((await fetch(wp.apiBase + "/health")).status).toBe(200)
      expect((await fetch(wp.origin + "/api/lm/v1/health")).status).toBe(404)
      const document: any = await (await fetch(wp.apiBase + "/openapi.json")).json()
      expect(Object.keys(document.paths)).toContain("/wp-json/lm/v1/health")
    } finally {
      await wp.close()
    }
  })
})
