/**
 * Releases gated by entitlement codes (CONTRACT §15), over HTTP on the memory store, PGlite and (with DATABASE_URL)
 * PostgreSQL: an update check offers only releases whose codes the license holds (its own and its policy's, live),
 * and a download re-checks them (403 `entitlements_missing` with `data.missing`). Codes arrive as a JSON list or, in an upload, as one
 * comma-separated form field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { serviceUrl } from "../../../test/support/services.js"
import { adminAuth, startApp, type TestApp } from "./support/App.js"
import { createLicense, expectError, expectInvalid, expectOk, unique } from "./support/Management.js"

/** PostgreSQL joins the stores when DATABASE_URL names a server (CI sets it), on a database of its own. */
const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Array<"memory" | "pglite" | "postgres"> = ["memory", "pglite", ...(postgresUrl === "" ? [] : ["postgres" as const])]

for (const store of stores) {
  describe(`releases gated by entitlements (${store})`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store === "postgres" ? "memory" : store, store === "postgres" ? { storeLayer: freshPostgresStore(postgresUrl) } : {})
    })
    afterAll(() => app?.close())

    const publish = async (productId: number, version: string, entitlements?: ReadonlyArray<string>) =>
      expectOk(await app.call("POST", "/releases", {
        body: { product_id: productId, version, artifact_url: `https://cdn.example.com/app-${version}.zip`, ...(entitlements ? { entitlements } : {}) }
      }), 201)
    const check = async (key: string, version: string) =>
      expectOk(await app.call("GET", `/updates/check?license_key=${key}&version=${version}`, { auth: null }))

    it("an update check offers the newest release whose codes the license holds; a code added to its policy unlocks more", async () => {
      const product = unique()
      await publish(product, "1.1.0")
      const gated = await publish(product, "2.0.0", ["v2", "export"])
      expect(gated.entitlements).toEqual(["export", "v2"])
      const plan = expectOk(await app.call("POST", "/policies", { body: { name: "Plan", entitlements: ["export"] } }), 201)
      const { license_key } = await createLicense(app, { product_id: product, policy_id: plan.id })

      const basic = await check(license_key, "1.0.0")
      expect(basic).toMatchObject({ update_available: true, latest_version: "2.0.0", release: { version: "1.1.0" } })

      expectOk(await app.call("PUT", `/policies/${plan.id}`, { body: { entitlements: ["export", "v2"] } }))
      const unlocked = await check(license_key, "1.0.0")
      expect(unlocked).toMatchObject({ update_available: true, release: { version: "2.0.0", entitlements: ["export", "v2"] } })

      // The license's own codes count too.
      const own = await createLicense(app, { product_id: product, entitlements: ["v2", "export"] })
      expect((await check(own.license_key, "1.0.0")).release.version).toBe("2.0.0")
    })

    it("a download re-checks the release's codes: 403 entitlements_missing naming them once the license lost one", async () => {
      const product = unique()
      await publish(product, "3.0.0", ["pro"])
      const plan = expectOk(await app.call("POST", "/policies", { body: { name: "Pro", entitlements: ["pro"] } }), 201)
      const { license_key } = await createLicense(app, { product_id: product, policy_id: plan.id })
      const offered = await check(license_key, "2.0.0")
      expect(offered.release.version).toBe("3.0.0")
      const first = await fetch(offered.download_url, { redirect: "manual" })
      expect(first.status).toBe(302)

      expectOk(await app.call("PUT", `/policies/${plan.id}`, { body: { entitlements: [] } }))
      const refused = await fetch(offered.download_url, { redirect: "manual" })
      const body = await refused.json() as any
      expect([refused.status, body.code, body.data.missing]).toEqual([403, "entitlements_missing", ["pro"]])
      expect((await check(license_key, "2.0.0"))).toMatchObject({ update_available: false, release: null, latest_version: "3.0.0" })
    })

    it("an upload takes the codes as one comma-separated field; bad codes are 400", async () => {
      const product = unique()
      const form = new FormData()
      form.set("product_id", String(product))
      form.set("version", "1.0.0")
      form.set("entitlements", "sync, export,")
      form.set("file", new Blob([new Uint8Array([1, 2, 3])]), "a.bin")
      const res = await fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })
      const created = await res.json() as any
      expect(res.status, JSON.stringify(created)).toBe(201)
      expect(created.data.entitlements).toEqual(["export", "sync"])
      const bad = await app.call("POST", "/releases", {
        body: { product_id: product, version: "1.0.1", artifact_url: "https://cdn.example.com/a.zip", entitlements: ["NOPE"] }
      })
      expectError(bad, 400, "rest_invalid_param")
      expectInvalid(bad, "entitlements")
    })
  })
}
