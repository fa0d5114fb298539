/**
 * `POST /licenses/import` over HTTP (CONTRACT §17) on the memory store, PGlite and PostgreSQL (DATABASE_URL):
 * a WPLM export with five-group keys imported, then read by every key-reading route (§4: management by path, the
 * client routes by body, the WPLM namespace); all or nothing with each bad row named; management only.
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
      expect(res.body.data).toEqual({ imported: 2 })

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
        expect(back.body.data).toEqual({ imported: 1203 })
        expect((await other.call("GET", `/licenses/${data[5]!.license_key}`)).body.data).toMatchObject({ product_id: product })
      } finally {
        await other.close()
      }
      const bad = await app.call("GET", "/licenses/export?search=%C3%84")
      expect(bad.status).toBe(400)
    })

    it("refuses an unknown format, and callers without an API key", async () => {
      const unknown = await app.call("POST", "/licenses/import", { body: { format: "xml", data: [] } })
      expect(unknown.status).toBe(400)
      expect(unknown.body.data.params).toHaveProperty("format")
      expect((await app.call("POST", "/licenses/import", { body: { format: "lm", data: [] }, auth: null })).status).toBe(401)
    })
  })
}
