/**
 * Policies and entitlements over real HTTP (CONTRACT §15), on the memory store, PGlite and (with DATABASE_URL)
 * PostgreSQL: policy CRUD and its refusals, a license created with a policy or moved to one (its defaults under
 * the body's fields), effective entitlements live from the policy, `apply`, `policy_in_use`, validate's `entitlements` with
 * `entitlements_missing` at its place in the order, and `ent` in the license token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { serviceUrl } from "../../../test/support/services.js"
import { startApp, type TestApp } from "./support/App.js"
import { activate, createLicense, expectError, expectInvalid, expectList, expectOk, isoTime, tokenPayload, unique } from "./support/Management.js"

/** PostgreSQL joins the stores when DATABASE_URL names a server (CI sets it), on a database of its own. */
const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Array<"memory" | "pglite" | "postgres"> = ["memory", "pglite", ...(postgresUrl === "" ? [] : ["postgres" as const])]

for (const store of stores) {
  describe(`policies on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store === "postgres" ? "memory" : store, store === "postgres" ? { storeLayer: freshPostgresStore(postgresUrl) } : {})
    })
    afterAll(() => app?.close())

    const createPolicy = async (body: Record<string, unknown>) => expectOk(await app.call("POST", "/policies", { body }), 201)
    const getLicense = async (key: string) => expectOk(await app.call("GET", `/licenses/${key}`))
    const validate = async (body: Record<string, unknown>) => expectOk(await app.call("POST", "/validate", { body, auth: null }))

    describe("policy routes", () => {
      it("creates with the License defaults, sorts and dedupes codes, and reads back", async () => {
        const data = await createPolicy({ name: "Basic", entitlements: ["sync", "export", "sync"] })
        expect(data).toEqual({
          id: expect.any(Number),
          name: "Basic",
          product_id: null,
          entitlements: ["export", "sync"],
          max_activations: null,
          overage_strategy: "deny",
          is_floating: false,
          lease_duration: 600,
          require_heartbeat: false,
          heartbeat_interval: 600,
          valid_for_days: null,
          grace_days: 0,
          license_count: 0,
          created_at: expect.stringMatching(isoTime),
          updated_at: expect.stringMatching(isoTime)
        })
        expect(expectOk(await app.call("GET", `/policies/${data.id}`))).toEqual(data)
      })

      it("lists oldest first, filtered by product, and updates only the fields sent", async () => {
        const product = unique()
        const a = await createPolicy({ name: "Team", product_id: product, is_floating: true, max_activations: 10 })
        const b = await createPolicy({ name: "Solo", product_id: product })
        await createPolicy({ name: "Elsewhere", product_id: unique() })
        const listed = expectList(await app.call("GET", `/policies?product_id=${product}`), "policies", { total: 2 })
        expect(listed.map((p: any) => p.id)).toEqual([a.id, b.id])
        const updated = expectOk(await app.call("PUT", `/policies/${a.id}`, { body: { name: "Team+", entitlements: ["a.b:c-d_e"] } }))
        expect(updated).toMatchObject({ name: "Team+", is_floating: true, max_activations: 10, entitlements: ["a.b:c-d_e"] })
        const cleared = expectOk(await app.call("PUT", `/policies/${a.id}`, { body: { max_activations: null, is_floating: null, entitlements: null } }))
        expect(cleared).toMatchObject({ max_activations: null, is_floating: false, entitlements: [] })
      })

      it("refuses bad input with the field named, unknown ids with policy_not_found", async () => {
        expectInvalid(await app.call("POST", "/policies", { body: {} }), "name")
        expectInvalid(await app.call("POST", "/policies", { body: { name: "" } }), "name")
        expectInvalid(await app.call("POST", "/policies", { body: { name: "x".repeat(101) } }), "name")
        expectInvalid(await app.call("POST", "/policies", { body: { name: "Bad", entitlements: ["Export"] } }), "entitlements[0]")
        expectInvalid(await app.call("POST", "/policies", { body: { name: "Bad", entitlements: ["ok", "-x"] } }), "entitlements[1]")
        const many = Array.from({ length: 65 }, (_, i) => `code-${i}`)
        expectInvalid(await app.call("POST", "/policies", { body: { name: "Bad", entitlements: many } }), "entitlements")
        expectInvalid(await app.call("POST", "/policies", { body: { name: "Bad", lease_duration: 0 } }), "lease_duration")
        expectError(await app.call("POST", "/policies", { body: { name: "Bad", license_count: 3 } }), 400, "rest_invalid_param")
        expectError(await app.call("GET", "/policies/999999"), 404, "policy_not_found")
        expectError(await app.call("PUT", "/policies/999999", { body: { name: "x" } }), 404, "policy_not_found")
        expectError(await app.call("DELETE", "/policies/999999"), 404, "policy_not_found")
        expectError(await app.call("POST", "/policies/999999/apply"), 404, "policy_not_found")
        expectError(await app.call("GET", "/policies", { auth: null }), 401, "rest_unauthorized")
        // 64 codes are fine.
        expect((await createPolicy({ name: "Max", entitlements: many.slice(0, 64) })).entitlements).toHaveLength(64)
      })
    })

    describe("licenses of a policy", () => {
      it("a license created with a policy gets its settings under the body's fields; codes are the union", async () => {
        const product = unique()
        const pro = await createPolicy({
          name: "Pro",
          product_id: product,
          entitlements: ["export", "sync"],
          max_activations: 3,
          is_floating: true,
          lease_duration: 900,
          grace_days: 2
        })
        const license = await createLicense(app, { policy_id: pro.id, max_activations: 5, entitlements: ["beta", "export"] })
        expect(license).toMatchObject({
          policy_id: pro.id,
          product_id: product,
          max_activations: 5,
          is_floating: true,
          lease_duration: 900,
          grace_days: 2,
          entitlements: ["beta", "export"],
          effective_entitlements: ["beta", "export", "sync"]
        })
        expect(await getLicense(license.license_key)).toMatchObject({ effective_entitlements: ["beta", "export", "sync"] })
        expect(expectOk(await app.call("GET", `/policies/${pro.id}`)).license_count).toBe(1)
        expectError(await app.call("POST", "/licenses", { body: { policy_id: 999999 } }), 404, "policy_not_found")
        expectInvalid(await app.call("POST", "/licenses", { body: { entitlements: ["UPPER"] } }), "entitlements[0]")
      })

      it("a license moved to a policy takes its defaults (the patch's fields win); null detaches it", async () => {
        const team = await createPolicy({ name: "Team", entitlements: ["team"], max_activations: 10, require_heartbeat: true })
        const license = await createLicense(app, { max_activations: 1 })
        const moved = expectOk(await app.call("PUT", `/licenses/${license.license_key}`, { body: { policy_id: team.id, require_heartbeat: false } }))
        expect(moved).toMatchObject({ policy_id: team.id, max_activations: 10, require_heartbeat: false, effective_entitlements: ["team"] })
        // Another PUT of the same policy keeps the license's own values.
        const own = expectOk(await app.call("PUT", `/licenses/${license.license_key}`, { body: { max_activations: 2, policy_id: team.id } }))
        expect(own).toMatchObject({ max_activations: 2 })
        const detached = expectOk(await app.call("PUT", `/licenses/${license.license_key}`, { body: { policy_id: null } }))
        expect(detached).toMatchObject({ policy_id: null, max_activations: 2, effective_entitlements: [] })
        expectError(await app.call("PUT", `/licenses/${license.license_key}`, { body: { policy_id: 999999 } }), 404, "policy_not_found")
      })

      it("generated keys take the policy given to generate", async () => {
        const plan = await createPolicy({ name: "Gen", entitlements: ["gen"], max_activations: 4 })
        const generator = expectOk(await app.call("POST", "/generators", { body: { name: "with plan" } }), 201)
        const res = await app.call("POST", `/generators/${generator.id}/generate`, { body: { count: 2, policy_id: plan.id } })
        const keys = expectOk(res, 201, { total: 2 }).licenses
        expect(keys.map((l: any) => [l.policy_id, l.max_activations, l.effective_entitlements])).toEqual([
          [plan.id, 4, ["gen"]],
          [plan.id, 4, ["gen"]]
        ])
      })

      it("entitlements are live: a code added to or removed from the policy holds for its licenses at once", async () => {
        const plan = await createPolicy({ name: "Live", entitlements: ["export"] })
        const { license_key } = await createLicense(app, { policy_id: plan.id })
        expect((await validate({ license_key, entitlements: ["export"] })).code).toBe("valid")
        expectOk(await app.call("PUT", `/policies/${plan.id}`, { body: { entitlements: ["sync"] } }))
        const refused = await validate({ license_key, entitlements: ["export"] })
        expect(refused).toMatchObject({ valid: false, code: "entitlements_missing", missing: ["export"], signed_payload: null })
        expect((await validate({ license_key, entitlements: ["sync"] })).code).toBe("valid")
        expect((await getLicense(license_key)).effective_entitlements).toEqual(["sync"])
      })

      it("apply copies the policy's settings into every license of it, in one call, and counts the changed ones", async () => {
        const plan = await createPolicy({ name: "Apply", max_activations: 2 })
        const a = await createLicense(app, { policy_id: plan.id, max_activations: 7 })
        const b = await createLicense(app, { policy_id: plan.id })
        const other = await createLicense(app, { max_activations: 7 })
        expectOk(await app.call("PUT", `/policies/${plan.id}`, { body: { max_activations: 3, grace_days: 5 } }))
        expect(expectOk(await app.call("POST", `/policies/${plan.id}/apply`))).toEqual({ updated: 2 })
        for (const key of [a.license_key, b.license_key]) expect(await getLicense(key)).toMatchObject({ max_activations: 3, grace_days: 5 })
        expect((await getLicense(other.license_key)).max_activations).toBe(7)
        expect(expectOk(await app.call("POST", `/policies/${plan.id}/apply`, { body: {} }))).toEqual({ updated: 0 })
      })

      it("a policy in use is not deleted (409 policy_in_use); once its licenses left, it is", async () => {
        const plan = await createPolicy({ name: "In use" })
        const license = await createLicense(app, { policy_id: plan.id })
        expectError(await app.call("DELETE", `/policies/${plan.id}`), 409, "policy_in_use")
        expectOk(await app.call("GET", `/policies/${plan.id}`))
        expectOk(await app.call("PUT", `/licenses/${license.license_key}`, { body: { policy_id: null } }))
        expect(expectOk(await app.call("DELETE", `/policies/${plan.id}`))).toEqual({ deleted: true, id: plan.id })
        expectError(await app.call("GET", `/policies/${plan.id}`), 404, "policy_not_found")
      })
    })

    describe("validate with entitlements", () => {
      it("answers entitlements_missing after the license checks and before the machine checks", async () => {
        const plan = await createPolicy({ name: "Order", entitlements: ["export"] })
        const { license_key } = await createLicense(app, { policy_id: plan.id, max_activations: 1 })
        // Before the machine checks: an unknown fingerprint on a license lacking a code is entitlements_missing.
        expect(await validate({ license_key, fingerprint: "nobody", entitlements: ["export", "sso"] })).toMatchObject({
          valid: false,
          code: "entitlements_missing",
          missing: ["sso"],
          machine: null
        })
        expect((await validate({ license_key, fingerprint: "nobody", entitlements: ["export"] })).code).toBe("fingerprint_not_activated")
        // After the license checks: a revoked license answers license_revoked.
        expectOk(await app.call("POST", `/licenses/${license_key}/revoke`))
        const revoked = await validate({ license_key, entitlements: ["sso"] })
        expect(revoked.code).toBe("license_revoked")
        expect(revoked.missing).toBeUndefined()
        expectInvalid(await app.call("POST", "/validate", { body: { license_key, entitlements: ["Not A Code"] }, auth: null }), "entitlements[0]")
      })

      it("the license token appends ent (the effective codes, sorted) after exp", async () => {
        const plan = await createPolicy({ name: "Token", entitlements: ["sync", "export"] })
        const { license_key } = await createLicense(app, { policy_id: plan.id, entitlements: ["beta"] })
        await activate(app, license_key, "fp-1")
        const answer = await validate({ license_key, fingerprint: "fp-1", entitlements: ["sync"] })
        expect(answer.code).toBe("valid")
        expect(answer.missing).toBeUndefined()
        expect(answer.license.effective_entitlements).toEqual(["beta", "export", "sync"])
        const payload = tokenPayload(answer.signed_payload)
        expect(Object.keys(payload).slice(-2)).toEqual(["exp", "ent"])
        expect(payload.ent).toEqual(["beta", "export", "sync"])
      })
    })
  })
}
