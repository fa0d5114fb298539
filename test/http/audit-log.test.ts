/**
 * The audit log over real HTTP (CONTRACT §18), on memory, PGlite and (with DATABASE_URL) PostgreSQL: every
 * management write by a key, refused ones included, with actor, IP, action, target, request id and status;
 * reads are not recorded; a refused write leaves its refusal only (the entry of the change rolled back with it);
 * a write refused for a malformed request is recorded with the status sent (400); `GET /audit-log` filters,
 * refuses a malformed filter, and pages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "../../packages/http/test/support/App.js"
import { basic, expectError, expectInvalid, expectList, expectOk } from "../../packages/http/test/support/Management.js"
import { freshPostgresStore } from "../storage-contract/pg-support.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")
const stores = [
  { name: "memory", start: () => startApp("memory") },
  { name: "pglite", start: () => startApp("pglite") },
  ...(url === "" ? [] : [{ name: "postgres", start: () => startApp("memory", { storeLayer: freshPostgresStore(url) }) }])
]

for (const store of stores) {
  describe(`audit log on ${store.name}`, () => {
    let app: TestApp
    let adminId: number
    beforeAll(async () => {
      app = await store.start()
      adminId = (await app.call("GET", "/api-keys")).body.data.api_keys[0].id
    })
    afterAll(() => app?.close())

    const entries = async (query = ""): Promise<Array<any>> => {
      const res = await app.call("GET", `/audit-log${query}`)
      expect(res.status).toBe(200)
      return res.body.data.entries
    }

    it("records each write with actor, IP, action, target, request id and status; reads are not recorded", async () => {
      const created = await app.call("POST", "/licenses", { body: {}, headers: { "x-request-id": "audit-create-1" } })
      const key = expectOk(created, 201).license_key as string
      expectOk(await app.call("POST", `/licenses/${key.toLowerCase()}/revoke`))
      expectError(await app.call("POST", `/licenses/${key}/suspend`), 409, "invalid_transition")
      await app.call("GET", `/licenses/${key}`)
      const mine = await entries(`?target_type=license&target_id=${key}`)
      expect(mine.map((e: any) => [e.action, e.status])).toEqual([
        ["license.suspend", 409],
        ["license.revoke", 200],
        ["license.create", 201]
      ])
      const [suspend, revoke, create] = mine
      expect(create).toEqual({
        id: create.id,
        at: create.at,
        actor: { type: "api_key", api_key_id: adminId, truncated_key: expect.stringMatching(/^\u2026[0-9a-f]{7}$/) },
        ip: expect.stringMatching(/127\.0\.0\.1$/),
        action: "license.create",
        target: { type: "license", id: key },
        request_id: "audit-create-1",
        status: 201
      })
      expect(revoke.request_id).toMatch(/^[0-9a-f-]{36}$/)
      expect(Date.parse(suspend.at)).toBeGreaterThanOrEqual(Date.parse(create.at))
      expect(suspend.id).toBeGreaterThan(create.id)
    })

    it("a write refused inside its transaction leaves only its refusal", async () => {
      const key = expectOk(await app.call("POST", "/licenses", { body: {} }), 201).license_key
      const again = await app.call("POST", "/licenses", { body: { license_key: key }, headers: { "x-request-id": `again-${key}` } })
      expectError(again, 409, "license_exists")
      const creates = (await entries("?action=license.create&per_page=100")).filter((e: any) => e.request_id === `again-${key}`)
      expect(creates.map((e: any) => [e.target, e.status])).toEqual([[{ type: "license", id: null }, 409]])
    })

    it("records refusals by scope and by the domain, and the id of what a create made", async () => {
      const reader = expectOk(await app.call("POST", "/api-keys", { body: { scope: "read", description: "reader" } }), 201)
      const readerAuth = basic(reader.consumer_key, reader.consumer_secret)
      expectError(await app.call("POST", "/licenses", { body: {}, auth: readerAuth }), 403, "rest_forbidden")
      const byReader = await entries(`?actor=${reader.id}`)
      expect(byReader.map((e: any) => [e.action, e.status, e.actor.truncated_key])).toEqual([
        ["license.create", 403, reader.truncated_key]
      ])
      const made = await entries(`?action=api_key.create&target_id=${reader.id}`)
      expect(made.map((e: any) => [e.target, e.status, e.actor.api_key_id])).toEqual([
        [{ type: "api_key", id: String(reader.id) }, 201, adminId]
      ])
      expectError(await app.call("DELETE", "/webhooks/999999"), 404, "webhook_not_found")
      expect((await entries("?target_type=webhook&target_id=999999")).map((e: any) => [e.action, e.status])).toEqual([
        ["webhook.delete", 404]
      ])
    })

    it("filters by actor type, action and time, pages newest first, and refuses bad filters", async () => {
      expect(await entries("?actor=cli")).toEqual([])
      const all = await entries("?per_page=100")
      expect(all.length).toBeGreaterThanOrEqual(7)
      expect(all.map((e: any) => e.id)).toEqual([...all.map((e: any) => e.id)].sort((a, b) => b - a))
      expect((await entries("?actor=api_key&per_page=100")).length).toBe(all.length)
      const page2 = await app.call("GET", "/audit-log?per_page=2&page=2")
      expect(expectList(page2, "entries", { total: all.length, page: 2, per_page: 2 }).map((e: any) => e.id))
        .toEqual(all.slice(2, 4).map((e: any) => e.id))
      const future = new Date(Date.now() + 3_600_000).toISOString()
      expect(await entries(`?from=${future}`)).toEqual([])
      expect((await entries(`?to=${future}&per_page=100`)).length).toBe(all.length)
      expect((await entries("?action=license.revoke")).every((e: any) => e.action === "license.revoke")).toBe(true)
      expectInvalid(await app.call("GET", "/audit-log?actor=robot"), "actor")
      expectInvalid(await app.call("GET", "/audit-log?from=yesterday"), "from")
      expectInvalid(await app.call("GET", "/audit-log?page=0"), "page")
    })

    it("records a write refused for a malformed path or body with the status it was answered (400), not 500", async () => {
      const sent = [
        await app.call("DELETE", "/releases/abc", { headers: { "x-request-id": "malformed-path" } }),
        await app.call("POST", "/licenses", { body: { max_activations: "many" }, headers: { "x-request-id": "malformed-body" } })
      ]
      expect(sent.map((res) => res.status)).toEqual([400, 400])
      const recorded = (await entries("?per_page=100")).filter((e: any) => e.request_id?.startsWith("malformed-"))
      expect(recorded.map((e: any) => [e.request_id, e.action, e.status])).toEqual([
        ["malformed-body", "license.create", 400],
        ["malformed-path", "release.delete", 400]
      ])
    })

    it("refuses a malformed target_id filter naming it; an id, a license key and a signing key id are filters", async () => {
      for (const bad of ["abc", "1.5", "NaN", "--1", "0"]) expectInvalid(await app.call("GET", `/audit-log?target_id=${bad}`), "target_id")
      for (const good of ["777777", "ABCD-EFGH-JKLM-NPQR", "0123456789abcdef"]) {
        expectList(await app.call("GET", `/audit-log?target_id=${good}`), "entries", { total: 0, page: 1, per_page: 20 })
      }
    })
  })
}
