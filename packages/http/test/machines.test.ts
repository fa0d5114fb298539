/**
 * Machine management over real HTTP (CONTRACT §6), on the memory store and on PGlite: a license's machines,
 * one machine, admin deactivation and revocation, and every refusal these routes answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"
import {
  activate,
  createLicense,
  expectError,
  expectInvalid,
  expectList,
  expectOk,
  isoTime,
  tokenPayload
} from "./support/Management.js"

for (const store of ["memory", "pglite"] as const) {
  describe(`machine routes on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    /** The public activate call, whatever it answers. */
    const tryActivate = (key: string, fingerprint: string) =>
      app.call("POST", "/activate", { body: { license_key: key, fingerprint }, auth: null })

    describe("GET /licenses/{key}/machines", () => {
      it("lists the license's machines oldest first with their components, filtered by status", async () => {
        const { license_key } = await createLicense(app)
        const a = await activate(app, license_key, "list-a", {
          name: "Desk",
          components: [{ kind: "cpu", fingerprint: "cpu-1", name: "Ryzen" }, { kind: "mac", fingerprint: "00:11" }]
        })
        const b = await activate(app, license_key, "list-b")
        const c = await activate(app, license_key, "list-c")
        expectOk(await app.call("DELETE", `/machines/${b.id}`))
        expectOk(await app.call("POST", `/machines/${c.id}/revoke`))

        const all = expectList(await app.call("GET", `/licenses/${license_key}/machines`), "machines", { total: 3 })
        expect(all.map((m: any) => [m.id, m.status])).toEqual([[a.id, "active"], [b.id, "inactive"], [c.id, "revoked"]])
        expect(all[0]).toMatchObject({
          fingerprint: "list-a",
          name: "Desk",
          components: [
            { id: expect.any(Number), kind: "cpu", fingerprint: "cpu-1", name: "Ryzen" },
            { id: expect.any(Number), kind: "mac", fingerprint: "00:11", name: null }
          ]
        })
        for (const status of ["active", "inactive", "revoked"]) {
          const only = expectList(await app.call("GET", `/licenses/${license_key}/machines?status=${status}`), "machines", { total: 1 })
          expect(only.map((m: any) => m.status)).toEqual([status])
        }
      })

      it("matches the key trimmed and upper-cased, and pages", async () => {
        const { license_key } = await createLicense(app)
        const ids: Array<number> = []
        for (const fp of ["p-1", "p-2", "p-3"]) ids.push((await activate(app, license_key, fp)).id)
        const page2 = expectList(
          await app.call("GET", `/licenses/%20${license_key.toLowerCase()}/machines?per_page=2&page=2`),
          "machines",
          { total: 3, page: 2, per_page: 2 }
        )
        expect(page2.map((m: any) => m.id)).toEqual([ids[2]])
        expectList(await app.call("GET", `/licenses/${license_key}/machines?per_page=500`), "machines", { total: 3, per_page: 100 })
        const empty = (await createLicense(app)).license_key
        expectList(await app.call("GET", `/licenses/${empty}/machines`), "machines", { total: 0 })
      })

      it("refuses a bad status or paging, a malformed key (400) and an unknown key (404)", async () => {
        const { license_key } = await createLicense(app)
        expectInvalid(await app.call("GET", `/licenses/${license_key}/machines?status=dead&page=0&per_page=-2`), "status", "page", "per_page")
        expectInvalid(await app.call("GET", "/licenses/ABC/machines"), "license_key")
        expectError(await app.call("GET", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ4/machines"), 404, "license_not_found")
      })
    })

    describe("GET /machines/{id}", () => {
      it("answers the machine with its components", async () => {
        const license = await createLicense(app)
        const machine = await activate(app, license.license_key, "one-1", {
          hostname: "h.local",
          platform: "darwin",
          app_version: "2.0.0",
          meta: { k: "v" },
          components: [{ kind: "disk", fingerprint: "d-1" }]
        })
        const data = expectOk(await app.call("GET", `/machines/${machine.id}`))
        expect(data).toEqual({
          id: machine.id,
          license_id: license.id,
          fingerprint: "one-1",
          name: null,
          hostname: "h.local",
          platform: "darwin",
          app_version: "2.0.0",
          ip_address: "127.0.0.1",
          status: "active",
          activated_at: expect.stringMatching(isoTime),
          deactivated_at: null,
          deactivation_reason: null,
          last_heartbeat_at: null,
          lease_expires_at: null,
          meta: { k: "v" },
          components: [{ id: expect.any(Number), kind: "disk", fingerprint: "d-1", name: null }],
          created_at: expect.stringMatching(isoTime)
        })
      })

      it("refuses an id that is not a positive integer (400) and an unknown one (404 machine_not_found)", async () => {
        for (const id of ["0", "-1", "1.5", "abc", "1e3", "99999999999999999999"]) {
          expectInvalid(await app.call("GET", `/machines/${id}`), "id")
        }
        expectError(await app.call("GET", "/machines/987654321"), 404, "machine_not_found")
      })
    })

    describe("DELETE /machines/{id}", () => {
      it("deactivates with reason admin and frees the seat; a repeat answers the same", async () => {
        const { license_key } = await createLicense(app, { max_activations: 1 })
        const machine = await activate(app, license_key, "seat-1")
        expectError(await tryActivate(license_key, "seat-2"), 422, "machine_limit_exceeded")

        const data = expectOk(await app.call("DELETE", `/machines/${machine.id}`))
        expect(Object.keys(data).sort()).toEqual(["deactivated", "machine"])
        expect(data.deactivated).toBe(true)
        expect(data.machine).toMatchObject({ id: machine.id, status: "inactive", deactivation_reason: "admin" })
        expect(data.machine.deactivated_at).toMatch(isoTime)
        expect(expectOk(await app.call("GET", `/licenses/${license_key}`))).toMatchObject({ activation_count: 0, status: "inactive" })

        expect(expectOk(await app.call("DELETE", `/machines/${machine.id}`))).toEqual(data)
        const other = await activate(app, license_key, "seat-2")
        // Unlike a revoked one, a deactivated fingerprint may come back.
        expectOk(await app.call("DELETE", `/machines/${other.id}`))
        expect((await activate(app, license_key, "seat-1")).id).toBe(machine.id)
      })

      it("refuses body fields, bad ids and unknown machines", async () => {
        const { license_key } = await createLicense(app)
        const machine = await activate(app, license_key, "del-x")
        expectInvalid(await app.call("DELETE", `/machines/${machine.id}`, { body: { reason: "client" } }), "reason")
        expect(expectOk(await app.call("GET", `/machines/${machine.id}`)).status).toBe("active")
        expectInvalid(await app.call("DELETE", "/machines/zero"), "id")
        expectError(await app.call("DELETE", "/machines/987654321"), 404, "machine_not_found")
      })
    })

    describe("POST /machines/{id}/revoke", () => {
      it("revokes: seat freed, the fingerprint barred from the license, listed on the CRL; a repeat is 200", async () => {
        const { license_key } = await createLicense(app, { max_activations: 1 })
        const machine = await activate(app, license_key, "rev-1")
        const data = expectOk(await app.call("POST", `/machines/${machine.id}/revoke`))
        expect(Object.keys(data).sort()).toEqual(["machine", "revoked"])
        expect(data.revoked).toBe(true)
        expect(data.machine).toMatchObject({ id: machine.id, status: "revoked", deactivation_reason: "admin" })

        expectError(await tryActivate(license_key, "rev-1"), 403, "machine_revoked")
        await activate(app, license_key, "rev-2")

        const crl = tokenPayload(expectOk(await app.call("GET", "/crl", { auth: null })).crl)
        expect(crl.revoked_machines).toContain(machine.id)

        expect(expectOk(await app.call("POST", `/machines/${machine.id}/revoke`, { body: {} }))).toEqual(data)
      })

      it("revokes an inactive machine too", async () => {
        const { license_key } = await createLicense(app)
        const machine = await activate(app, license_key, "rev-inactive")
        expectOk(await app.call("DELETE", `/machines/${machine.id}`))
        const data = expectOk(await app.call("POST", `/machines/${machine.id}/revoke`))
        expect(data.machine).toMatchObject({ status: "revoked", deactivation_reason: "admin" })
        expectError(await tryActivate(license_key, "rev-inactive"), 403, "machine_revoked")
      })

      it("refuses body fields, bad ids and unknown machines", async () => {
        const { license_key } = await createLicense(app)
        const machine = await activate(app, license_key, "rev-x")
        expectInvalid(await app.call("POST", `/machines/${machine.id}/revoke`, { body: { why: "lost" } }), "why")
        expect(expectOk(await app.call("GET", `/machines/${machine.id}`)).status).toBe("active")
        expectInvalid(await app.call("POST", "/machines/1.0/revoke"), "id")
        expectError(await app.call("POST", "/machines/987654321/revoke"), 404, "machine_not_found")
      })
    })
  })
}
