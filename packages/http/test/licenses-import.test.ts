/**
 * `POST /licenses/import` over HTTP (CONTRACT §17) on the memory store, PGlite and PostgreSQL (DATABASE_URL):
 * a WPLM export with five-group keys imported, then read by every key-reading route (§4: management by path, the
 * client routes by body, the WPLM namespace); all or nothing with each bad row named; management only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { serviceUrl } from "../../../test/support/services.js"
import { startApp, type TestApp } from "./support/App.js"

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

    it("refuses an unknown format, and callers without an API key", async () => {
      const unknown = await app.call("POST", "/licenses/import", { body: { format: "xml", data: [] } })
      expect(unknown.status).toBe(400)
      expect(unknown.body.data.params).toHaveProperty("format")
      expect((await app.call("POST", "/licenses/import", { body: { format: "lm", data: [] }, auth: null })).status).toBe(401)
    })
  })
}
