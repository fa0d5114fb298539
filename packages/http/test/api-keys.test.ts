/**
 * API keys over real HTTP (CONTRACT §2, §11, §14), on the memory store and on PGlite: issuing a key (the only
 * time its secret is shown), listing without secrets, revoking, who may manage keys, and every refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminKey, sharedApp, type TestApp } from "./support/App.js"
import { basic, expectError, expectInvalid, expectList, expectOk, expectSuccess, isoTime } from "./support/Management.js"

for (const store of ["memory", "pglite"] as const) {
  describe(`API key routes on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    const issue = async (body: Record<string, unknown>) => expectOk(await app.call("POST", "/api-keys", { body }), 201)

    describe("POST /api-keys", () => {
      it("issues a key: 201 with the consumer key and secret, once", async () => {
        const data = await issue({ description: "CI", scope: "read" })
        expect(Object.keys(data).sort()).toEqual(
          ["consumer_key", "consumer_secret", "created_at", "description", "id", "scope", "truncated_key"]
        )
        expect(data).toMatchObject({ description: "CI", scope: "read" })
        expect(data.consumer_key).toMatch(/^ck_[0-9a-f]{40}$/)
        expect(data.consumer_secret).toMatch(/^cs_[0-9a-f]{40}$/)
        expect(data.truncated_key).toBe(`\u2026${data.consumer_key.slice(-7)}`)
        expect(data.created_at).toMatch(isoTime)

        const listed = expectList(await app.call("GET", "/api-keys?per_page=100"), "api_keys", {
          total: (await app.call("GET", "/api-keys")).body.meta.total,
          per_page: 100
        })
        const entry = listed.find((k: any) => k.id === data.id)
        expect(entry).toEqual({
          id: data.id,
          description: "CI",
          scope: "read",
          truncated_key: data.truncated_key,
          created_at: data.created_at,
          last_access_at: null
        })
        expect(JSON.stringify(listed)).not.toContain(data.consumer_secret)
        expect(JSON.stringify(listed)).not.toContain(data.consumer_key)
      })

      it("issues working credentials; the description defaults to empty", async () => {
        const data = await issue({ scope: "read_write" })
        expect(data.description).toBe("")
        const auth = basic(data.consumer_key, data.consumer_secret)
        expectSuccess(await app.call("GET", "/api-keys", { auth }))
        expect(expectOk(await app.call("POST", "/api-keys", { body: { scope: "read" }, auth }), 201).scope).toBe("read")
      })

      it("requires a valid scope and refuses unknown fields and long descriptions", async () => {
        expectInvalid(await app.call("POST", "/api-keys", { body: { description: "x" } }), "scope")
        expectInvalid(await app.call("POST", "/api-keys", { body: { scope: "admin" } }), "scope")
        expectInvalid(await app.call("POST", "/api-keys", { body: { scope: "read", description: "d".repeat(256) } }), "description")
        expectInvalid(await app.call("POST", "/api-keys", { body: { scope: "read", consumer_key: adminKey.consumerKey } }), "consumer_key")
        expectInvalid(await app.call("POST", "/api-keys", { body: { scope: "read", description: null } }), "description")
      })
    })

    describe("GET /api-keys", () => {
      it("lists keys oldest first, the bootstrap key included, with last access and paging", async () => {
        const res = await app.call("GET", "/api-keys")
        const total = res.body.meta.total
        const keys = expectList(res, "api_keys", { total })
        expect(keys[0]).toMatchObject({
          description: "bootstrap",
          scope: "read_write",
          truncated_key: `\u2026${adminKey.consumerKey.slice(-7)}`,
          last_access_at: expect.stringMatching(isoTime)
        })
        expect(keys.map((k: any) => k.id)).toEqual([...keys.map((k: any) => k.id)].sort((a, b) => a - b))
        const second = expectList(await app.call("GET", "/api-keys?per_page=1&page=2"), "api_keys", { total, page: 2, per_page: 1 })
        expect(second.map((k: any) => k.id)).toEqual(total >= 2 ? [keys[1].id] : [])
        expectInvalid(await app.call("GET", "/api-keys?per_page=0"), "per_page")
      })
    })

    describe("DELETE /api-keys/{id}", () => {
      it("revokes a key at once: {deleted: true, id}, then 401 for it and 404 api_key_not_found", async () => {
        const data = await issue({ scope: "read_write", description: "temp" })
        const auth = basic(data.consumer_key, data.consumer_secret)
        expectSuccess(await app.call("GET", "/licenses", { auth }))
        expect(expectOk(await app.call("DELETE", `/api-keys/${data.id}`))).toEqual({ deleted: true, id: data.id })
        const refused = await app.call("GET", "/licenses", { auth })
        expectError(refused, 401, "rest_unauthorized")
        expect(refused.headers.get("www-authenticate")).toBe(`Basic realm="lm"`)
        expectError(await app.call("DELETE", `/api-keys/${data.id}`), 404, "api_key_not_found")
        const listed = (await app.call("GET", "/api-keys?per_page=100")).body.data.api_keys
        expect(listed.some((k: any) => k.id === data.id)).toBe(false)
      })

      it("lets a key revoke itself", async () => {
        const data = await issue({ scope: "read_write" })
        const auth = basic(data.consumer_key, data.consumer_secret)
        expect(expectOk(await app.call("DELETE", `/api-keys/${data.id}`, { auth }))).toEqual({ deleted: true, id: data.id })
        expectError(await app.call("DELETE", `/api-keys/${data.id}`, { auth }), 401, "rest_unauthorized")
      })

      it("refuses bad ids, unknown ids and body fields", async () => {
        for (const id of ["0", "abc", "1.5"]) expectInvalid(await app.call("DELETE", `/api-keys/${id}`), "id")
        expectError(await app.call("DELETE", "/api-keys/987654321"), 404, "api_key_not_found")
        const data = await issue({ scope: "read" })
        expectInvalid(await app.call("DELETE", `/api-keys/${data.id}`, { body: { now: true } }), "now")
        expectSuccess(await app.call("GET", "/licenses", { auth: basic(data.consumer_key, data.consumer_secret) }))
      })
    })

    describe("managing keys needs a read_write key", () => {
      const listIds = async () => (await app.call("GET", "/api-keys?per_page=100")).body.data.api_keys.map((k: any) => k.id)
      const bootstrapId = async () =>
        (await app.call("GET", "/api-keys?per_page=100")).body.data.api_keys.find(
          (k: any) => k.truncated_key === `\u2026${adminKey.consumerKey.slice(-7)}`
        ).id
      const expectForbidden = (res: Awaited<ReturnType<TestApp["call"]>>) => {
        expectError(res, 403, "rest_forbidden")
        expect(res.body.message).toContain("read_write")
      }

      it("refuses a write key creating keys (read_write or its own scope) and deleting the bootstrap key; a read_write key may", async () => {
        const writer = await issue({ scope: "write" })
        const auth = basic(writer.consumer_key, writer.consumer_secret)
        const before = await listIds()
        expectForbidden(await app.call("POST", "/api-keys", { auth, body: { scope: "read_write", description: "escalate" } }))
        expectForbidden(await app.call("POST", "/api-keys", { auth, body: { scope: "write" } }))
        expectForbidden(await app.call("DELETE", `/api-keys/${await bootstrapId()}`, { auth }))
        expectForbidden(await app.call("DELETE", `/api-keys/${writer.id}`, { auth }))
        expect(await listIds()).toEqual(before)

        const admin = await issue({ scope: "read_write" })
        const adminAuth = basic(admin.consumer_key, admin.consumer_secret)
        const made = expectOk(await app.call("POST", "/api-keys", { auth: adminAuth, body: { scope: "read_write" } }), 201)
        expect((await app.call("GET", "/api-keys?per_page=100", { auth: adminAuth })).body.data.api_keys.map((k: any) => k.id)).toContain(made.id)
        expect(expectOk(await app.call("DELETE", `/api-keys/${writer.id}`, { auth: adminAuth }))).toEqual({ deleted: true, id: writer.id })
      })

      it("refuses a read key listing keys", async () => {
        const reader = await issue({ scope: "read" })
        expectForbidden(await app.call("GET", "/api-keys", { auth: basic(reader.consumer_key, reader.consumer_secret) }))
      })
    })
  })
}
