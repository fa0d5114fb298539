/**
 * CORS for browser clients (CONTRACT §2, `server/Cors.ts`) against the real server: preflights of public and
 * management routes, and `Access-Control-Allow-Origin` on every answer of a public route to a request with an
 * `Origin`, errors included, on the fast path (hot client writes with a `Content-Length`) and on the HttpApi
 * path (the same writes sent chunked, which the fast path leaves to the Effect stack; every other route), the
 * update routes (`updates/check`, `updates/download`) included.
 */
import { request as httpRequest } from "node:http"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseCorsOrigins } from "@lm/server"
import { FastPath } from "../src/server/FastPath.js"
import type { ClientGuard } from "../src/server/ClientPipeline.js"
import { adminAuth, startApp, type TestApp } from "./support/App.js"

interface Reply {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: any
}

/** A raw HTTP request (Node's `fetch` manages `Origin` itself); `chunked` sends the body without a length. */
const send = (
  app: TestApp,
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: string; readonly chunked?: boolean } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined) {
      headers["content-type"] ??= "application/json"
      if (!options.chunked) headers["content-length"] = String(Buffer.byteLength(options.body))
    }
    const req = httpRequest(`${app.apiBase}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let body: unknown = text
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode!, headers: res.headers, body })
      })
    })
    req.on("error", reject)
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })

const preflight = (app: TestApp, path: string, origin: string, method: string, requestHeaders?: string) =>
  send(app, "OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": method,
      ...(requestHeaders === undefined ? {} : { "access-control-request-headers": requestHeaders })
    }
  })

const served = (app: TestApp) => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served().validate))

const unknownKey = JSON.stringify({ license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" })

/** A public guard that dies for one key: the 500 `internal_error` of a public route. */
const dyingKey = "DIE0-DIE0-DIE0-DIE0"
const dyingGuard: ClientGuard = (request) =>
  request.licenseKey === dyingKey ? Effect.die(new Error("guard exploded")) : Effect.void

describe("CORS with LM_CORS_ORIGINS unset", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp("memory", { clientGuards: [dyingGuard] })
  })
  afterAll(() => app?.close())

  it("answers a preflight of validate from any origin with 204 and *", async () => {
    const res = await preflight(app, "/validate", "https://shop.example.net", "POST", "Content-Type, X-Client-Version")
    expect(res.status).toBe(204)
    expect(res.headers["access-control-allow-origin"]).toBe("*")
    expect(String(res.headers["access-control-allow-methods"]).split(", ")).toContain("POST")
    const allowed = String(res.headers["access-control-allow-headers"]).split(", ")
    expect(allowed).toContain("content-type")
    expect(allowed).toContain("x-client-version")
    expect(allowed).not.toContain("authorization")
    expect(res.headers["access-control-max-age"]).toBe("7200")
    expect(res.headers["x-request-id"]).toBeTypeOf("string")
  })

  it("answers preflights of every kind of public route", async () => {
    for (const path of ["/crl", "/public-key", "/public-keyk", "/health", "/openapi.json", "/activate", "/heartbeat"]) {
      const res = await preflight(app, path, "http://localhost:5173", path === "/activate" || path === "/heartbeat" ? "POST" : "GET")
      expect(res.status, path).toBe(204)
      expect(res.headers["access-control-allow-origin"], path).toBe("*")
    }
  })

  it("puts * on validate's errors on the fast path and on the HttpApi path", async () => {
    const origin = { origin: "https://shop.example.net" }
    const before = await served(app)
    const fast404 = await send(app, "POST", "/validate", { headers: origin, body: unknownKey })
    const fast400 = await send(app, "POST", "/validate", { headers: origin, body: "{not json" })
    const fast500 = await send(app, "POST", "/validate", { headers: origin, body: JSON.stringify({ license_key: dyingKey }) })
    expect(await served(app)).toBe(before + 3)
    const slow404 = await send(app, "POST", "/validate", { headers: origin, body: unknownKey, chunked: true })
    const slow400 = await send(app, "POST", "/validate", { headers: origin, body: "{not json", chunked: true })
    const slow500 = await send(app, "POST", "/validate", { headers: origin, body: JSON.stringify({ license_key: dyingKey }), chunked: true })
    const slow413 = await send(app, "POST", "/validate", { headers: origin, body: `{"x":"${"a".repeat(1024 * 1024)}"}` })
    expect(await served(app)).toBe(before + 3)
    for (const [res, status, code] of [
      [fast404, 404, "license_not_found"],
      [slow404, 404, "license_not_found"],
      [fast400, 400, "rest_invalid_json"],
      [slow400, 400, "rest_invalid_json"],
      [fast500, 500, "internal_error"],
      [slow500, 500, "internal_error"],
      [slow413, 413, "rest_payload_too_large"]
    ] as const) {
      expect([res.status, res.body.code]).toEqual([status, code])
      expect(res.headers["access-control-allow-origin"], code).toBe("*")
      expect(String(res.headers["access-control-expose-headers"])).toContain("X-Request-Id")
    }
  })

  it("puts * on GET routes and on the unknown-method answer of a public path", async () => {
    const origin = { origin: "https://shop.example.net" }
    for (const path of ["/crl", "/public-keyk", "/health", "/openapi.json"]) {
      const res = await send(app, "GET", path, { headers: origin })
      expect(res.status, path).toBe(200)
      expect(res.headers["access-control-allow-origin"], path).toBe("*")
    }
    const wrongMethod = await send(app, "DELETE", "/validate", { headers: origin })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers["access-control-allow-origin"]).toBe("*")
  })

  it("allows the update routes from any origin: preflights, and the download's answers, with its headers readable", async () => {
    const origin = "https://app.example.org"
    for (const path of ["/updates/check", "/updates/download"]) {
      const res = await preflight(app, path, origin, "GET", "Range, If-None-Match")
      expect(res.status, path).toBe(204)
      expect(res.headers["access-control-allow-origin"], path).toBe("*")
      expect(String(res.headers["access-control-allow-methods"]).split(", "), path).toEqual(expect.arrayContaining(["GET", "HEAD"]))
      expect(String(res.headers["access-control-allow-headers"]).split(", "), path).toEqual(expect.arrayContaining(["range", "if-none-match"]))
      expect(String(res.headers["access-control-allow-headers"]).split(", "), path).not.toContain("authorization")
    }
    const form = new FormData()
    form.append("product_id", "61")
    form.append("version", "1.0.0")
    form.append("file", new Blob([new Uint8Array([1, 2, 3, 4])]), "app.bin")
    expect((await fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })).status).toBe(201)
    const license = await app.call("POST", "/licenses", { body: { product_id: 61 } })
    const check = await send(app, "GET", `/updates/check?license_key=${license.body.data.license_key}&version=0.9.0`, { headers: { origin } })
    expect(check.headers["access-control-allow-origin"]).toBe("*")
    const path = new URL(check.body.data.download_url).pathname.slice(new URL(app.apiBase).pathname.length) +
      new URL(check.body.data.download_url).search
    const whole = await send(app, "GET", path, { headers: { origin, range: "bytes=1-2" } })
    expect(whole.status).toBe(206)
    expect(whole.headers["access-control-allow-origin"]).toBe("*")
    expect(String(whole.headers["access-control-expose-headers"]).split(", ")).toEqual(
      expect.arrayContaining(["ETag", "Content-Disposition", "Content-Range", "Accept-Ranges"])
    )
    const refused = await send(app, "GET", "/updates/download?token=forged", { headers: { origin } })
    expect([refused.status, refused.body.code]).toEqual([403, "download_token_invalid"])
    expect(refused.headers["access-control-allow-origin"]).toBe("*")
  })

  it("sends no CORS headers without an Origin", async () => {
    const res = await send(app, "POST", "/validate", { body: unknownKey })
    expect(res.status).toBe(404)
    expect(res.headers["access-control-allow-origin"]).toBeUndefined()
    expect(res.headers.vary).toBeUndefined()
  })

  it("refuses a management preflight (403) and never allows a management route cross-origin", async () => {
    const res = await preflight(app, "/licenses", "https://admin.example.com", "POST", "authorization, content-type")
    expect(res.status).toBe(403)
    expect(res.body.code).toBe("rest_forbidden")
    expect(res.body.message).toContain("LM_CORS_ORIGINS")
    expect(res.headers["access-control-allow-origin"]).toBeUndefined()
    expect(res.headers["access-control-allow-headers"]).toBeUndefined()
    const list = await send(app, "GET", "/licenses", { headers: { origin: "https://admin.example.com", authorization: adminAuth } })
    expect(list.status).toBe(200)
    expect(list.headers["access-control-allow-origin"]).toBeUndefined()
  })

  it("leaves an OPTIONS that is no preflight to the routes (an authenticated one is a read)", async () => {
    const plain = await send(app, "OPTIONS", "/licenses", { headers: { authorization: adminAuth } })
    const withOrigin = await send(app, "OPTIONS", "/licenses", { headers: { authorization: adminAuth, origin: "https://a.example" } })
    expect(withOrigin.status).toBe(plain.status)
    expect(withOrigin.body.code).toBe(plain.body.code)
    expect(plain.status).not.toBe(204)
  })
})

describe("CORS with LM_CORS_ORIGINS set", () => {
  const listed = "https://app.example.com"
  let app: TestApp
  beforeAll(async () => {
    app = await startApp("memory", { settings: { corsOrigins: parseCorsOrigins(`${listed}, http://localhost:5173`) } })
  })
  afterAll(() => app?.close())

  it("echoes a listed origin on public preflights and answers, with Vary: Origin", async () => {
    const pre = await preflight(app, "/validate", listed, "POST")
    expect(pre.status).toBe(204)
    expect(pre.headers["access-control-allow-origin"]).toBe(listed)
    expect(pre.headers.vary).toBe("Origin")
    for (const chunked of [false, true]) {
      const res = await send(app, "POST", "/validate", { headers: { origin: listed }, body: unknownKey, chunked })
      expect(res.status).toBe(404)
      expect(res.headers["access-control-allow-origin"]).toBe(listed)
      expect(res.headers.vary).toBe("Origin")
    }
  })

  it("gives an origin not listed no allow header, on preflights (403) and answers, both paths", async () => {
    const stranger = "https://evil.example.org"
    const pre = await preflight(app, "/validate", stranger, "POST")
    expect(pre.status).toBe(403)
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined()
    for (const chunked of [false, true]) {
      const res = await send(app, "POST", "/validate", { headers: { origin: stranger }, body: unknownKey, chunked })
      expect(res.status).toBe(404)
      expect(res.headers["access-control-allow-origin"]).toBeUndefined()
      expect(res.headers.vary).toBe("Origin")
    }
    const crl = await send(app, "GET", "/crl", { headers: { origin: stranger } })
    expect(crl.headers["access-control-allow-origin"]).toBeUndefined()
    expect(crl.headers.vary).toBe("Origin")
  })

  it("allows a listed origin on management routes, with Authorization, never *", async () => {
    const pre = await preflight(app, "/licenses", "http://localhost:5173", "POST", "authorization, content-type")
    expect(pre.status).toBe(204)
    expect(pre.headers["access-control-allow-origin"]).toBe("http://localhost:5173")
    expect(String(pre.headers["access-control-allow-headers"]).split(", ")).toContain("authorization")
    expect(String(pre.headers["access-control-allow-methods"]).split(", ")).toEqual(expect.arrayContaining(["GET", "POST"]))
    const list = await send(app, "GET", "/licenses", { headers: { origin: listed, authorization: adminAuth } })
    expect(list.status).toBe(200)
    expect(list.headers["access-control-allow-origin"]).toBe(listed)
    const unauthorized = await send(app, "GET", "/licenses", { headers: { origin: listed } })
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.headers["access-control-allow-origin"]).toBe(listed)
    const strangerPre = await preflight(app, "/licenses", "https://evil.example.org", "GET")
    expect(strangerPre.status).toBe(403)
    expect(strangerPre.headers["access-control-allow-origin"]).toBeUndefined()
  })
})
