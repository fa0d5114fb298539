/**
 * The console's static files (CONTRACT §19, `server/Console.ts`) as `lm serve` serves them, on a folder of built
 * files made here (the browser test, test/console/, runs the real build): the page at every client-side route
 * with the API's place filled in, hashed assets cached for a year, ETags, gzip, the strict
 * Content-Security-Policy on every answer, and `LM_CONSOLE=off`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"

const page = `<!doctype html><meta name="lm-rest-root" content=""><script type="module" src="/console/assets/main-ABC123.js"></script>`
const script = `console.log(${JSON.stringify("the console ".repeat(100))})`

let dir: string
let app: TestApp
let off: TestApp

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lm-console-"))
  mkdirSync(join(dir, "assets"))
  writeFileSync(join(dir, "index.html"), page)
  writeFileSync(join(dir, "assets", "main-ABC123.js"), script)
  app = await startApp("memory", { settings: { restRoot: "/wp-json" }, env: { LM_CONSOLE_DIR: dir } })
  off = await startApp("memory", { env: { LM_CONSOLE_DIR: dir, LM_CONSOLE: "off" } })
})

afterAll(async () => {
  await app?.close()
  await off?.close()
  rmSync(dir, { recursive: true, force: true })
})

const get = (target: TestApp, path: string, headers: Record<string, string> = {}) =>
  fetch(`${target.origin}${path}`, { headers, redirect: "manual" })

describe("the console's files", () => {
  it("serves the page at /console/ and at any client-side route, telling it where the API is", async () => {
    for (const path of ["/console/", "/console/licenses", "/console/licenses/ABCD-EFGH-JKLM-NPQR?tab=machines"]) {
      const response = await get(app, path)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(response.headers.get("cache-control")).toBe("no-cache")
      const html = await response.text()
      expect(html).toContain(`<meta name="lm-rest-root" content="/wp-json">`)
      expect(html).toContain(`src="/console/assets/main-ABC123.js"`)
    }
    const redirect = await get(app, "/console?x=1")
    expect(redirect.status).toBe(308)
    expect(redirect.headers.get("location")).toBe("/console/?x=1")
  })

  it("sends the strict Content-Security-Policy with every answer, a missing file's included", async () => {
    for (const path of ["/console/", "/console/assets/main-ABC123.js", "/console/assets/missing.js"]) {
      const response = await get(app, path)
      const csp = response.headers.get("content-security-policy") ?? ""
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).toContain("default-src 'none'")
      expect(csp).not.toContain("unsafe-inline")
      expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    }
  })

  it("caches hashed assets for a year, answers 304 to their ETag and gzips them for browsers that accept it", async () => {
    const plain = await get(app, "/console/assets/main-ABC123.js")
    expect(plain.status).toBe(200)
    expect(plain.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect(await plain.text()).toBe(script)
    const etag = plain.headers.get("etag")!
    expect(etag).toMatch(/^"[\w-]+"$/)
    const again = await get(app, "/console/assets/main-ABC123.js", { "if-none-match": etag })
    expect(again.status).toBe(304)
    const pageTag = (await get(app, "/console/")).headers.get("etag")!
    expect((await get(app, "/console/licenses", { "if-none-match": pageTag })).status).toBe(304)

    const zipped = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      // Node's fetch always asks for gzip and unzips; a raw request shows the bytes sent.
      import("node:http").then(({ get: httpGet }) =>
        httpGet(`${app.origin}/console/assets/main-ABC123.js`, { headers: { "accept-encoding": "gzip" } }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (chunk: Buffer) => chunks.push(chunk))
          res.on("end", () => resolve({ encoding: res.headers["content-encoding"], body: Buffer.concat(chunks) }))
        }).on("error", reject)
      )
    })
    expect(zipped.encoding).toBe("gzip")
    expect(gunzipSync(zipped.body).toString("utf8")).toBe(script)
  })

  it("answers a missing asset 404 in the envelope instead of the page", async () => {
    for (const path of ["/console/assets/missing.js", "/console/assets/%E0%A4%A", "/console/assets/..%2Findex.html"]) {
      const response = await get(app, path)
      expect(response.status, path).toBe(404)
      expect(await response.json()).toMatchObject({ success: false, code: "rest_no_route", data: { status: 404 } })
    }
    const head = await fetch(`${app.origin}/console/licenses`, { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(head.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
  })

  it("leaves the API where it was", async () => {
    const response = await app.call("GET", "/health", { auth: null })
    expect(response.status).toBe(200)
  })

  it("serves nothing with LM_CONSOLE=off", async () => {
    for (const path of ["/console/", "/console", "/console/assets/main-ABC123.js"]) {
      const response = await get(off, path)
      expect(response.status).toBe(404)
      expect(await response.json()).toMatchObject({ code: "rest_no_route" })
    }
  })
})
