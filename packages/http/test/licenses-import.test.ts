/**
 * `POST /licenses/import` over HTTP (CONTRACT §17) on the memory store, PGlite and PostgreSQL (DATABASE_URL):
 * a WPLM export with five-group keys imported, then read by every key-reading route (§4: management by path, the
 * client routes by body, the WPLM namespace); 10,000 licenses with their machines in one call (a body over 1 MiB)
 * whose NDJSON export imports back, licenses and machines, with their seats held; all or nothing with each bad
 * row named; management only. Then the import's own body limit, on the memory store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { serviceUrl } from "../../../test/support/services.js"
import { adminAuth, startApp, type TestApp } from "./support/App.js"

const url = serviceUrl("DATABASE_URL")
const stores = [
  { name: "memory", start: () => startApp("memory", { settings: { wplmCompat: true } }) },
  { name: "pglite", start: () => startApp("pglite", { settings: { wplmCompat: true } }) },
  ...(url === "" ? [] : [{ name: "postgres", start: () => startApp("pglite", { storeLayer: freshPostgresStore(url), settings: { wplmCompat: true } }) }])
]

for (const store of stores) {
  describe(`POST /licenses/import on ${store.name}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await store.start()
    })
    afterAll(() => app?.close())

    it("imports a WPLM export whose five-group keys every key-reading route then accepts", async () => {
      const key = `WPLM${store.name.slice(0, 1).toUpperCase()}-AAAAA-BBBBB-CCCCC-DDDDD`
      const res = await app.call("POST", "/licenses/import", {
        body: { format: "wplm", data: [{ license_key: key, status: 2, product_id: 5, max_activations: 2 }, { license_key: `${key}-E`, status: 4 }] }
      })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.data).toEqual({ imported: 2, machines: 0 })

      const got = await app.call("GET", `/licenses/${key.toLowerCase()}`)
      expect(got.body.data).toMatchObject({ license_key: key, source: "import", status: "inactive", product_id: 5, max_activations: 2 })
      expect((await app.call("GET", `/licenses/${key}-E`)).body.data.status).toBe("suspended")

      const activated = await app.call("POST", "/activate", { body: { license_key: key, fingerprint: "imported-fp" }, auth: null })
      expect(activated.status, JSON.stringify(activated.body)).toBe(201)
      const valid = await app.call("POST", "/validate", { body: { license_key: key, fingerprint: "imported-fp" }, auth: null })
      expect(valid.body.data).toMatchObject({ valid: true, code: "valid" })
      const wplm = await fetch(`${app.origin}/api/wplm/v1/validate`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ license_key: key, fingerprint: "imported-fp" })
      })
      expect((await wplm.json() as any).data).toMatchObject({ valid: true, license: { status: 1, source: 0 } })
    })

    it("imports nothing when a row is bad, naming each bad row", async () => {
      const res = await app.call("POST", "/licenses/import", {
        body: { format: "lmfwc", data: [{ license_key: "FINE-AAAA-BBBB-CCCC", status: 1 }, { license_key: "NOT_A_KEY", status: 1 }, { license_key: "ALSO-FINE-KEY1", status: 9 }] }
      })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ code: "rest_invalid_param", data: { status: 400 } })
      expect(Object.keys(res.body.data.params).sort()).toEqual(["data[1].license_key", "data[2].status"])
      expect((await app.call("GET", "/licenses/FINE-AAAA-BBBB-CCCC")).status).toBe(404)
    })

    it("exports every matching license as NDJSON and as CSV, which import reads back", async () => {
      const product = 900_000 + Math.floor(Math.random() * 100_000)
      const data = Array.from({ length: 1203 }, (_, i) => ({ license_key: `EXP${product}-${i}-A`, product_id: product, status: "inactive" }))
      expect((await app.call("POST", "/licenses/import", { body: { format: "lm", data } })).status).toBe(201)
      const ndjson = await fetch(`${app.apiBase}/licenses/export?product_id=${product}`, { headers: { authorization: adminAuth } })
      expect(ndjson.status).toBe(200)
      expect(ndjson.headers.get("content-type")).toContain("application/x-ndjson")
      const lines = (await ndjson.text()).trim().split("\n").map((line) => JSON.parse(line))
      expect(lines.map((l) => l.license_key)).toEqual(data.map((d) => d.license_key))
      expect(lines[0]).toMatchObject({ product_id: product, source: "import", status: "inactive" })

      const csv = await fetch(`${app.apiBase}/licenses/export?format=csv&product_id=${product}`, { headers: { authorization: adminAuth } })
      expect(csv.headers.get("content-type")).toContain("text/csv")
      const text = await csv.text()
      expect(text.split("\n")[0]).toMatch(/^id,license_key,status,product_id,/)
      expect(text.trim().split("\n")).toHaveLength(1204)
      // Read back into an empty store, keys and fields kept.
      const other = await startApp("memory")
      try {
        const back = await other.call("POST", "/licenses/import", { body: { format: "csv", data: text } })
        expect(back.status, JSON.stringify(back.body).slice(0, 300)).toBe(201)
        expect(back.body.data).toEqual({ imported: 1203, machines: 0 })
        expect((await other.call("GET", `/licenses/${data[5]!.license_key}`)).body.data).toMatchObject({ product_id: product })
      } finally {
        await other.close()
      }
      const bad = await app.call("GET", "/licenses/export?search=%C3%84")
      expect(bad.status).toBe(400)
    })

    it("imports 10,000 licenses with their machines in one call, and its NDJSON export imports back, seats held", async () => {
      const product = 800_000 + Math.floor(Math.random() * 100_000)
      const at = "2026-03-04T05:06:07.000Z"
      const data = Array.from({ length: 10_000 }, (_, i) => ({
        license_key: `M${product}-${i}-WPLM-IMPORT`,
        product_id: product,
        max_activations: 3,
        activated_at: at,
        machines: [
          { fingerprint: `fp-${i}-a`, status: "active", hostname: `host-${i}.example.com`, platform: "linux", activated_at: at },
          { fingerprint: `fp-${i}-b`, status: "active", name: "laptop", activated_at: at },
          { fingerprint: `fp-${i}-c`, status: "revoked", activated_at: at, deactivated_at: at }
        ]
      }))
      const body = JSON.stringify({ format: "lm", data })
      expect(body.length).toBeGreaterThan(2 * 1024 * 1024)
      const res = await fetch(`${app.apiBase}/licenses/import`, {
        method: "POST",
        headers: { authorization: adminAuth, "content-type": "application/json" },
        body
      })
      expect(res.status, (await res.clone().text()).slice(0, 300)).toBe(201)
      expect(((await res.json()) as any).data).toEqual({ imported: 10_000, machines: 30_000 })

      // Seats are counted exactly: two of three held, so one more device fits and the next is refused.
      const key = data[42]!.license_key
      expect((await app.call("GET", `/licenses/${key}`)).body.data).toMatchObject({ activation_count: 2, status: "active" })
      expect((await app.call("POST", "/activate", { body: { license_key: key, fingerprint: "fp-new-1" }, auth: null })).status).toBe(201)
      const full = await app.call("POST", "/activate", { body: { license_key: key, fingerprint: "fp-new-2" }, auth: null })
      expect(full.status).toBe(422)
      expect(full.body.code).toBe("machine_limit_exceeded")
      const revoked = await app.call("POST", "/activate", { body: { license_key: data[7]!.license_key, fingerprint: "fp-7-c" }, auth: null })
      expect(revoked.body.code).toBe("machine_revoked")

      // The export's lines carry every machine; all 10,000 (about 20 MB) import back in one call.
      const exported = await fetch(`${app.apiBase}/licenses/export?product_id=${product}`, { headers: { authorization: adminAuth } })
      const lines = (await exported.text()).trim().split("\n").map((line) => JSON.parse(line))
      expect(lines).toHaveLength(10_000)
      expect(lines[42].machines.map((m: any) => [m.fingerprint, m.status])).toEqual(
        [["fp-42-a", "active"], ["fp-42-b", "active"], ["fp-42-c", "revoked"], ["fp-new-1", "active"]]
      )
      const other = await startApp("memory")
      try {
        const back = await fetch(`${other.apiBase}/licenses/import`, {
          method: "POST",
          headers: { authorization: adminAuth, "content-type": "application/json" },
          body: JSON.stringify({ format: "lm", data: lines })
        })
        expect(back.status, (await back.clone().text()).slice(0, 300)).toBe(201)
        expect(((await back.json()) as any).data).toEqual({ imported: 10_000, machines: 30_001 })
        const again = (await other.call("GET", `/licenses/${key}`)).body.data
        expect(again).toMatchObject({ activation_count: 3, activated_at: at, max_activations: 3, product_id: product })
        expect(again.machines.find((m: any) => m.fingerprint === "fp-42-a")).toMatchObject({
          hostname: "host-42.example.com", platform: "linux", activated_at: at, status: "active"
        })
        expect((await other.call("POST", "/activate", { body: { license_key: key, fingerprint: "fp-new-2" }, auth: null })).status).toBe(422)
        expect((await other.call("POST", "/activate", { body: { license_key: key, fingerprint: "fp-42-c" }, auth: null })).body.code)
          .toBe("machine_revoked")
      } finally {
        await other.close()
      }
    }, 600_000)

    it("refuses an unknown format, and callers without an API key", async () => {
      const unknown = await app.call("POST", "/licenses/import", { body: { format: "xml", data: [] } })
      expect(unknown.status).toBe(400)
      expect(unknown.body.data.params).toHaveProperty("format")
      expect((await app.call("POST", "/licenses/import", { body: { format: "lm", data: [] }, auth: null })).status).toBe(401)
    })
  })
}

describe("the import's body limit", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp("memory", { settings: { maxImportBodyBytes: 3 * 1024 * 1024 } })
  })
  afterAll(() => app?.close())

  /** A body of about `bytes` bytes: licenses whose meta pads them. */
  const bodyOf = (bytes: number, tag: string) => {
    const rows = Math.ceil(bytes / 10_000)
    return JSON.stringify({ format: "lm", data: Array.from({ length: rows }, (_, i) => ({ license_key: `${tag}-${i}-PAD`, meta: { pad: "x".repeat(9_900) } })) })
  }
  const post = (path: string, body: string | ReadableStream<Uint8Array>) =>
    fetch(`${app.apiBase}${path}`, {
      method: "POST",
      headers: { authorization: adminAuth, "content-type": "application/json" },
      body,
      ...(typeof body === "string" ? {} : { duplex: "half" })
    } as RequestInit)

  it("takes an import over 1 MiB up to its own limit; past it, and past 1 MiB elsewhere, answers the 413 envelope", async () => {
    const under = await post("/licenses/import", bodyOf(2 * 1024 * 1024, "UNDER"))
    expect(under.status, (await under.clone().text()).slice(0, 300)).toBe(201)

    const over = await post("/licenses/import", bodyOf(4 * 1024 * 1024, "OVER"))
    expect(over.status).toBe(413)
    expect(await over.json()).toMatchObject({ success: false, code: "rest_payload_too_large", data: { status: 413 } })

    // Sent without a Content-Length (chunked), it is cut off at the same limit, named in the message.
    const text = new TextEncoder().encode(bodyOf(4 * 1024 * 1024, "CHUNK"))
    const chunked = await post("/licenses/import", new ReadableStream({
      start(controller) {
        for (let i = 0; i < text.length; i += 65_536) controller.enqueue(text.subarray(i, i + 65_536))
        controller.close()
      }
    }))
    expect(chunked.status).toBe(413)
    expect(await chunked.json()).toMatchObject({ code: "rest_payload_too_large", message: expect.stringContaining(String(3 * 1024 * 1024)) })
    expect((await app.call("GET", "/licenses/CHUNK-0-PAD")).status).toBe(404)

    // Every other route keeps 1 MiB.
    const create = await post("/licenses", JSON.stringify({ meta: { pad: "x".repeat(1024 * 1024) } }))
    expect(create.status).toBe(413)
    expect(await create.json()).toMatchObject({ code: "rest_payload_too_large", data: { status: 413 } })
  })
})
