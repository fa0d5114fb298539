/**
 * License management over real HTTP (CONTRACT §3, §14), on the memory store and on PGlite: create, get,
 * update, delete, the actions, list filters and paging, and every refusal these routes answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminAuth, sharedApp, type TestApp } from "./support/App.js"
import {
  activate,
  createLicense,
  daysFromNow,
  expectError,
  expectInvalid,
  expectList,
  expectOk,
  isoTime,
  keyFormat,
  unique
} from "./support/Management.js"

const DAY = 86_400_000

const defaults = {
  status: "inactive",
  product_id: null,
  order_id: null,
  user_id: null,
  max_activations: null,
  activation_count: 0,
  overage_strategy: "deny",
  is_floating: false,
  lease_duration: 600,
  require_heartbeat: false,
  heartbeat_interval: 600,
  valid_for_days: null,
  expires_at: null,
  grace_days: 0,
  activated_at: null,
  source: "api",
  generator_id: null,
  subscription_id: null,
  meta: {},
  policy_id: null,
  entitlements: [],
  effective_entitlements: []
}

for (const store of ["memory", "pglite"] as const) {
  describe(`license routes on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    const create = (body: Record<string, unknown> = {}) => createLicense(app, body)

    describe("POST /licenses", () => {
      it("mints a key in the default format with the contract's defaults: 201, status inactive", async () => {
        const res = await app.call("POST", "/licenses", { body: {} })
        const data = expectOk(res, 201)
        expect(data).toMatchObject(defaults)
        expect(data.license_key).toMatch(keyFormat)
        expect(data.id).toBeGreaterThan(0)
        expect(data.created_at).toMatch(isoTime)
        expect(data.updated_at).toBe(data.created_at)
        expect(data).not.toHaveProperty("machines")
      })

      it("treats a POST without a body as {}", async () => {
        const res = await fetch(`${app.apiBase}/licenses`, { method: "POST", headers: { authorization: adminAuth } })
        expect(res.status).toBe(201)
      })

      it("takes every writable field; times with any offset come back in UTC", async () => {
        const data = await create({
          license_key: "  ab12-cd34-ef56-gh78 ",
          product_id: 7,
          order_id: 8,
          user_id: 9,
          max_activations: 3,
          overage_strategy: "allow_1_5x",
          is_floating: true,
          lease_duration: 31_536_000,
          require_heartbeat: true,
          heartbeat_interval: 1,
          valid_for_days: 30,
          expires_at: "2030-01-31T02:00:00+02:00",
          grace_days: 5,
          meta: { plan: "pro", seats: [1, 2] }
        })
        expect(data).toMatchObject({
          license_key: "AB12-CD34-EF56-GH78",
          product_id: 7,
          order_id: 8,
          user_id: 9,
          max_activations: 3,
          overage_strategy: "allow_1_5x",
          is_floating: true,
          lease_duration: 31_536_000,
          require_heartbeat: true,
          heartbeat_interval: 1,
          valid_for_days: 30,
          expires_at: "2030-01-31T00:00:00.000Z",
          grace_days: 5,
          meta: { plan: "pro", seats: [1, 2] },
          source: "api"
        })
      })

      it("treats null as the default on create", async () => {
        const data = await create({ max_activations: null, lease_duration: null, meta: null, expires_at: null, license_key: null })
        expect(data).toMatchObject({ max_activations: null, lease_duration: 600, meta: {}, expires_at: null })
        expect(data.license_key).toMatch(keyFormat)
      })

      it("refuses a key already in use, whatever its case: 409 license_exists", async () => {
        const { license_key } = await create()
        expectError(await app.call("POST", "/licenses", { body: { license_key: license_key.toLowerCase() } }), 409, "license_exists")
      })

      it("refuses license_key and generator_id together, and a malformed key", async () => {
        const generator = expectOk(await app.call("POST", "/generators", { body: { name: "both" } }), 201)
        expectInvalid(
          await app.call("POST", "/licenses", { body: { license_key: "AAAA-BBBB-CCCC-DDDD", generator_id: generator.id } }),
          "generator_id"
        )
        expectInvalid(await app.call("POST", "/licenses", { body: { license_key: "not-a-key" } }), "license_key")
        expectInvalid(await app.call("POST", "/licenses", { body: { license_key: "AAAA-BBBB-CCCC" } }), "license_key")
      })

      it("answers 404 generator_not_found for an unknown generator", async () => {
        expectError(await app.call("POST", "/licenses", { body: { generator_id: 987654 } }), 404, "generator_not_found")
      })

      it("draws from a generator's pool, then mints with it, the body's fields over the generator's defaults", async () => {
        const generator = expectOk(
          await app.call("POST", "/generators", { body: { name: "pool", prefix: "PX", default_max_activations: 4, default_is_floating: true } }),
          201
        )
        const generated = expectOk(await app.call("POST", `/generators/${generator.id}/generate`, { body: { count: 1 } }), 201, { total: 1 })
        const drawn = await create({ generator_id: generator.id, max_activations: 9 })
        expect(drawn).toMatchObject({
          license_key: generated.licenses[0].license_key,
          source: "pool",
          status: "inactive",
          generator_id: generator.id,
          max_activations: 9,
          is_floating: true
        })
        const minted = await create({ generator_id: generator.id })
        expect(minted).toMatchObject({ source: "generator", generator_id: generator.id, max_activations: 4, is_floating: true })
        expect(minted.license_key).toMatch(/^PX[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/)
      })

      it("rejects unknown and read-only fields, naming each", async () => {
        const params = expectInvalid(
          await app.call("POST", "/licenses", { body: { colour: "red", status: "active", activation_count: 3, id: 1 } }),
          "colour",
          "status",
          "activation_count",
          "id"
        )
        expect(params.colour).toBe("is not allowed")
      })

      it("checks each field's type and range", async () => {
        const bad = async (body: Record<string, unknown>, field: string) =>
          expectInvalid(await app.call("POST", "/licenses", { body }), field)
        await bad({ lease_duration: 0 }, "lease_duration")
        await bad({ lease_duration: 31_536_001 }, "lease_duration")
        await bad({ heartbeat_interval: 1.5 }, "heartbeat_interval")
        await bad({ heartbeat_interval: "600" }, "heartbeat_interval")
        await bad({ max_activations: -1 }, "max_activations")
        await bad({ product_id: 0 }, "product_id")
        await bad({ overage_strategy: "allow_3x" }, "overage_strategy")
        await bad({ is_floating: "yes" }, "is_floating")
        await bad({ valid_for_days: 0 }, "valid_for_days")
        await bad({ grace_days: -1 }, "grace_days")
        await bad({ expires_at: "2030-01-31T00:00:00" }, "expires_at")
        await bad({ expires_at: "2030-02-30T00:00:00Z" }, "expires_at")
        await bad({ expires_at: 1_900_000_000_000 }, "expires_at")
        await bad({ meta: [1, 2] }, "meta")
        await bad({ meta: "x" }, "meta")
        const several = expectInvalid(
          await app.call("POST", "/licenses", { body: { lease_duration: 0, grace_days: "x" } }),
          "lease_duration",
          "grace_days"
        )
        expect(several.lease_duration).toBe("must be an integer from 1 to 31536000")
      })

      it("takes meta up to 16 KiB of JSON and refuses more", async () => {
        // {"a":"…"} is 8 bytes around the string.
        expect((await create({ meta: { a: "x".repeat(16 * 1024 - 8) } })).meta.a).toHaveLength(16 * 1024 - 8)
        expectInvalid(await app.call("POST", "/licenses", { body: { meta: { a: "x".repeat(16 * 1024 - 7) } } }), "meta")
      })

      it("answers a body over 1 MiB with 413 rest_payload_too_large", async () => {
        const res = await app.call("POST", "/licenses", { body: { meta: { a: "x".repeat(1024 * 1024) } } })
        expectError(res, 413, "rest_payload_too_large")
      })

      it("answers a body that is not JSON, not an object or not declared JSON", async () => {
        expectError(await app.call("POST", "/licenses", { body: "{" }), 400, "rest_invalid_json")
        expectInvalid(await app.call("POST", "/licenses", { body: "[]" }), "body")
        expectError(
          await app.call("POST", "/licenses", { body: "license_key=x", headers: { "content-type": "text/plain" } }),
          415,
          "rest_unsupported_media_type"
        )
      })
    })

    describe("GET /licenses/{key}", () => {
      it("answers the license with its machines in every status", async () => {
        const license = await create({ max_activations: 3 })
        const first = await activate(app, license.license_key, "get-a", { components: [{ kind: "cpu", fingerprint: "c1" }] })
        const second = await activate(app, license.license_key, "get-b")
        expectOk(await app.call("DELETE", `/machines/${second.id}`))
        const data = expectOk(await app.call("GET", `/licenses/${license.license_key}`))
        expect(data).toMatchObject({ id: license.id, status: "active", activation_count: 1 })
        expect(data.activated_at).toMatch(isoTime)
        expect(data.machines.map((m: any) => [m.id, m.status])).toEqual([[first.id, "active"], [second.id, "inactive"]])
        expect(data.machines[0].components).toEqual([{ id: expect.any(Number), kind: "cpu", fingerprint: "c1", name: null }])
      })

      it("matches the path key trimmed and upper-cased", async () => {
        const { license_key, id } = await create()
        const data = expectOk(await app.call("GET", `/licenses/%20${license_key.toLowerCase()}%20`))
        expect(data).toMatchObject({ id, license_key, machines: [] })
      })

      it("answers 400 for a malformed key and 404 license_not_found for an unknown one", async () => {
        // A key of another shape than four groups may be an imported one (CONTRACT §4): looked up, not refused.
        expectError(await app.call("GET", "/licenses/ABCDE-FGHIJ-KLMNO-PQRST-UVWX9"), 404, "license_not_found")
        expectInvalid(await app.call("GET", "/licenses/NOT_A_KEY"), "license_key")
        expectError(await app.call("GET", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ9"), 404, "license_not_found")
      })
    })

    describe("PUT /licenses/{key}", () => {
      it("changes only the fields sent", async () => {
        const license = await create({ product_id: 1, max_activations: 2, meta: { a: 1 } })
        const data = expectOk(await app.call("PUT", `/licenses/${license.license_key}`, {
          body: { max_activations: 5, is_floating: true, expires_at: "2031-06-01T12:00:00-04:00" }
        }))
        expect(data).toMatchObject({
          id: license.id,
          product_id: 1,
          max_activations: 5,
          is_floating: true,
          expires_at: "2031-06-01T16:00:00.000Z",
          meta: { a: 1 },
          status: "inactive"
        })
        expect(Date.parse(data.updated_at)).toBeGreaterThanOrEqual(Date.parse(license.updated_at))
        expect(expectOk(await app.call("GET", `/licenses/${license.license_key}`))).toMatchObject({ max_activations: 5 })
      })

      it("clears with null: nullable settings to null, the others back to their defaults", async () => {
        const license = await create({
          product_id: 1,
          order_id: 2,
          user_id: 3,
          max_activations: 4,
          valid_for_days: 10,
          expires_at: daysFromNow(10),
          overage_strategy: "allow_2x",
          is_floating: true,
          lease_duration: 60,
          require_heartbeat: true,
          heartbeat_interval: 60,
          grace_days: 3,
          meta: { a: 1 }
        })
        const body = Object.fromEntries(
          ["product_id", "order_id", "user_id", "max_activations", "valid_for_days", "expires_at", "overage_strategy",
            "is_floating", "lease_duration", "require_heartbeat", "heartbeat_interval", "grace_days", "meta"].map((k) => [k, null])
        )
        const data = expectOk(await app.call("PUT", `/licenses/${license.license_key}`, { body }))
        expect(data).toMatchObject({ ...defaults, id: license.id })
      })

      it("refuses status (the actions change it), unknown fields and bad values, naming each", async () => {
        const { license_key } = await create()
        const params = expectInvalid(
          await app.call("PUT", `/licenses/${license_key}`, { body: { status: "revoked", source: "import", lease_duration: 0 } }),
          "status",
          "source",
          "lease_duration"
        )
        expect(params.status).toMatch(/not writable/)
        expect(expectOk(await app.call("GET", `/licenses/${license_key}`)).status).toBe("inactive")
      })

      it("keeps machines when the limit drops below the count, and refuses new activations", async () => {
        const { license_key } = await create({ max_activations: 2 })
        await activate(app, license_key, "drop-1")
        await activate(app, license_key, "drop-2")
        const data = expectOk(await app.call("PUT", `/licenses/${license_key}`, { body: { max_activations: 1 } }))
        expect(data).toMatchObject({ max_activations: 1, activation_count: 2 })
        const refused = await app.call("POST", "/activate", { body: { license_key, fingerprint: "drop-3" }, auth: null })
        expectError(refused, 422, "machine_limit_exceeded")
      })

      it("answers 404 for an unknown key and 400 for a malformed one", async () => {
        expectError(await app.call("PUT", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ8", { body: {} }), 404, "license_not_found")
        expectInvalid(await app.call("PUT", "/licenses/nope", { body: {} }), "license_key")
      })
    })

    describe("DELETE /licenses/{key}", () => {
      it("deletes the license and its machines: {deleted: true, id}", async () => {
        const { license_key, id } = await create()
        const machine = await activate(app, license_key, "del-1")
        const data = expectOk(await app.call("DELETE", `/licenses/${license_key.toLowerCase()}`))
        expect(data).toEqual({ deleted: true, id })
        expectError(await app.call("GET", `/licenses/${license_key}`), 404, "license_not_found")
        expectError(await app.call("GET", `/machines/${machine.id}`), 404, "machine_not_found")
        expectError(await app.call("DELETE", `/licenses/${license_key}`), 404, "license_not_found")
      })

      it("deletes a terminated license too", async () => {
        const { license_key, id } = await create()
        expectOk(await app.call("POST", `/licenses/${license_key}/terminate`, { body: { confirm: true } }))
        expect(expectOk(await app.call("DELETE", `/licenses/${license_key}`))).toEqual({ deleted: true, id })
      })

      it("rejects body fields and malformed keys", async () => {
        const { license_key } = await create()
        expectInvalid(await app.call("DELETE", `/licenses/${license_key}`, { body: { force: true } }), "force")
        expectInvalid(await app.call("DELETE", "/licenses/x"), "license_key")
      })
    })

    describe("POST /licenses/{key}/renew", () => {
      it("sets expires_at", async () => {
        const { license_key } = await create()
        const data = expectOk(await app.call("POST", `/licenses/${license_key}/renew`, { body: { expires_at: "2032-03-04T05:06:07.890+00:00" } }))
        expect(data.expires_at).toBe("2032-03-04T05:06:07.890Z")
      })

      it("extends by days from the later of now and the current expiry (from now when perpetual)", async () => {
        const future = await create({ expires_at: "2035-01-01T00:00:00Z" })
        const later = expectOk(await app.call("POST", `/licenses/${future.license_key}/renew`, { body: { days: 10 } }))
        expect(later.expires_at).toBe("2035-01-11T00:00:00.000Z")

        for (const body of [{}, { expires_at: daysFromNow(-5) }]) {
          const license = await create(body)
          const before = Date.now()
          const renewed = expectOk(await app.call("POST", `/licenses/${license.license_key}/renew`, { body: { days: 3 } }))
          const after = Date.now()
          expect(Date.parse(renewed.expires_at)).toBeGreaterThanOrEqual(before + 3 * DAY)
          expect(Date.parse(renewed.expires_at)).toBeLessThanOrEqual(after + 3 * DAY)
        }
      })

      it("with {} or no body resets relative validity, and refuses when the license has none", async () => {
        const relative = await create({ valid_for_days: 7, expires_at: daysFromNow(-1) })
        expect(relative.status).toBe("expired")
        const before = Date.now()
        const renewed = expectOk(await app.call("POST", `/licenses/${relative.license_key}/renew`))
        expect(Date.parse(renewed.expires_at)).toBeGreaterThanOrEqual(before + 7 * DAY)
        expect(renewed.status).toBe("inactive")

        const perpetual = await create()
        expectInvalid(await app.call("POST", `/licenses/${perpetual.license_key}/renew`, { body: {} }), "valid_for_days")
      })

      it("refuses expires_at with days, bad values and unknown fields", async () => {
        const { license_key } = await create({ valid_for_days: 1 })
        const path = `/licenses/${license_key}/renew`
        expectInvalid(await app.call("POST", path, { body: { expires_at: daysFromNow(1), days: 2 } }), "days")
        expectInvalid(await app.call("POST", path, { body: { days: 0 } }), "days")
        expectInvalid(await app.call("POST", path, { body: { days: 1.5 } }), "days")
        expectInvalid(await app.call("POST", path, { body: { expires_at: null } }), "expires_at")
        expectInvalid(await app.call("POST", path, { body: { until: daysFromNow(1) } }), "until")
        expectError(await app.call("POST", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ7/renew", { body: { days: 1 } }), 404, "license_not_found")
      })
    })

    describe("suspend, revoke, reinstate", () => {
      it("suspends keeping machines; a repeat is a no-op; reinstate goes back to the derived status", async () => {
        const { license_key } = await create()
        const machine = await activate(app, license_key, "susp-1")
        const suspended = expectOk(await app.call("POST", `/licenses/${license_key}/suspend`))
        expect(suspended).toMatchObject({ status: "suspended" })
        expect(expectOk(await app.call("POST", `/licenses/${license_key}/suspend`, { body: {} }))).toEqual(suspended)
        expect(expectOk(await app.call("GET", `/machines/${machine.id}`)).status).toBe("active")
        const back = expectOk(await app.call("POST", `/licenses/${license_key}/reinstate`))
        expect(back).toMatchObject({ status: "active", activation_count: 1 })
      })

      it("revokes from any issued status or suspended, reversibly", async () => {
        const { license_key } = await create()
        expectOk(await app.call("POST", `/licenses/${license_key}/suspend`))
        const revoked = expectOk(await app.call("POST", `/licenses/${license_key}/revoke`))
        expect(revoked.status).toBe("revoked")
        expect(expectOk(await app.call("POST", `/licenses/${license_key}/revoke`))).toEqual(revoked)
        expect(expectOk(await app.call("POST", `/licenses/${license_key}/reinstate`)).status).toBe("inactive")
      })

      it("reinstates an expired license back to expired", async () => {
        const { license_key } = await create({ expires_at: daysFromNow(-3) })
        expectOk(await app.call("POST", `/licenses/${license_key}/revoke`))
        expect(expectOk(await app.call("POST", `/licenses/${license_key}/reinstate`)).status).toBe("expired")
      })

      it("answers forbidden moves with 409 invalid_transition, data.from and data.action", async () => {
        const { license_key } = await create()
        const notSuspended = expectError(await app.call("POST", `/licenses/${license_key}/reinstate`), 409, "invalid_transition")
        expect(notSuspended).toEqual({ status: 409, from: "inactive", action: "reinstate" })
        expectOk(await app.call("POST", `/licenses/${license_key}/revoke`))
        const fromRevoked = expectError(await app.call("POST", `/licenses/${license_key}/suspend`), 409, "invalid_transition")
        expect(fromRevoked).toEqual({ status: 409, from: "revoked", action: "suspend" })
        expectOk(await app.call("POST", `/licenses/${license_key}/reinstate`))
        const repeat = expectError(await app.call("POST", `/licenses/${license_key}/reinstate`), 409, "invalid_transition")
        expect(repeat).toEqual({ status: 409, from: "inactive", action: "reinstate" })
      })

      it("refuses body fields, malformed and unknown keys", async () => {
        const { license_key } = await create()
        for (const action of ["suspend", "revoke", "reinstate"]) {
          expectInvalid(await app.call("POST", `/licenses/${license_key}/${action}`, { body: { reason: "x" } }), "reason")
          expectInvalid(await app.call("POST", `/licenses/bad/${action}`), "license_key")
          expectError(await app.call("POST", `/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ6/${action}`), 404, "license_not_found")
        }
      })
    })

    describe("POST /licenses/{key}/terminate", () => {
      it("needs confirm: true (400 confirmation_required)", async () => {
        const { license_key } = await create()
        const path = `/licenses/${license_key}/terminate`
        expectError(await app.call("POST", path), 400, "confirmation_required")
        expectError(await app.call("POST", path, { body: { confirm: false } }), 400, "confirmation_required")
        expectInvalid(await app.call("POST", path, { body: { confirm: "yes" } }), "confirm")
        expectInvalid(await app.call("POST", path, { body: { confirm: true, now: true } }), "now")
        expect(expectOk(await app.call("GET", `/licenses/${license_key}`)).status).toBe("inactive")
      })

      it("terminates for good, deactivates every machine; a repeat is 200; other writes are 409 license_terminated", async () => {
        const { license_key } = await create()
        const machine = await activate(app, license_key, "term-1")
        const data = expectOk(await app.call("POST", `/licenses/${license_key}/terminate`, { body: { confirm: true } }))
        expect(data).toMatchObject({ status: "terminated", activation_count: 0 })
        expect(expectOk(await app.call("GET", `/machines/${machine.id}`))).toMatchObject({
          status: "inactive",
          deactivation_reason: "license_terminated"
        })
        expect(expectOk(await app.call("POST", `/licenses/${license_key}/terminate`, { body: { confirm: true } }))).toEqual(data)
        const writes: Array<[string, string, unknown]> = [
          ["PUT", "", { max_activations: 1 }],
          ["POST", "/renew", { days: 1 }],
          ["POST", "/suspend", undefined],
          ["POST", "/revoke", undefined],
          ["POST", "/reinstate", undefined]
        ]
        for (const [method, suffix, body] of writes) {
          expectError(await app.call(method, `/licenses/${license_key}${suffix}`, body === undefined ? {} : { body }), 409, "license_terminated")
        }
      })

      it("answers 404 for an unknown key", async () => {
        expectError(await app.call("POST", "/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZ5/terminate", { body: { confirm: true } }), 404, "license_not_found")
      })
    })

    describe("GET /licenses", () => {
      it("filters by product_id, order_id, user_id and generator_id", async () => {
        const product = unique()
        const a = await create({ product_id: product, order_id: unique(), user_id: unique() })
        const b = await create({ product_id: product })
        const ids = (res: any) => expectList(res, "licenses", { total: res.body.meta?.total ?? -1 }).map((l: any) => l.id)
        expect(ids(await app.call("GET", `/licenses?product_id=${product}`))).toEqual([b.id, a.id])
        expect(ids(await app.call("GET", `/licenses?order_id=${a.order_id}`))).toEqual([a.id])
        expect(ids(await app.call("GET", `/licenses?user_id=${a.user_id}&product_id=${product}`))).toEqual([a.id])
        expect(ids(await app.call("GET", `/licenses?user_id=${a.user_id}&product_id=${unique()}`))).toEqual([])

        const generator = expectOk(await app.call("POST", "/generators", { body: { name: "filter" } }), 201)
        const issued = await create({ generator_id: generator.id })
        expect(ids(await app.call("GET", `/licenses?generator_id=${generator.id}`))).toEqual([issued.id])
      })

      it("filters by status, the derived ones included", async () => {
        const product = unique()
        const inactive = await create({ product_id: product })
        const active = await create({ product_id: product })
        await activate(app, active.license_key, "status-1")
        const expired = await create({ product_id: product, expires_at: daysFromNow(-2) })
        const inGrace = await create({ product_id: product, expires_at: daysFromNow(-2), grace_days: 5 })
        const suspended = await create({ product_id: product })
        expectOk(await app.call("POST", `/licenses/${suspended.license_key}/suspend`))
        const revoked = await create({ product_id: product })
        expectOk(await app.call("POST", `/licenses/${revoked.license_key}/revoke`))
        const terminated = await create({ product_id: product })
        expectOk(await app.call("POST", `/licenses/${terminated.license_key}/terminate`, { body: { confirm: true } }))

        const withStatus = async (status: string) => {
          const res = await app.call("GET", `/licenses?product_id=${product}&status=${status}&orderby=id&order=asc`)
          return expectList(res, "licenses", { total: res.body.meta.total }).map((l: any) => {
            expect(l.status).toBe(status)
            return l.id
          })
        }
        expect(await withStatus("inactive")).toEqual([inactive.id, inGrace.id])
        expect(await withStatus("active")).toEqual([active.id])
        expect(await withStatus("expired")).toEqual([expired.id])
        expect(await withStatus("suspended")).toEqual([suspended.id])
        expect(await withStatus("revoked")).toEqual([revoked.id])
        expect(await withStatus("terminated")).toEqual([terminated.id])

        const generator = expectOk(
          await app.call("POST", "/generators", { body: { name: "pending", product_id: product } }),
          201
        )
        const pool = expectOk(await app.call("POST", `/generators/${generator.id}/generate`, { body: { count: 2 } }), 201, { total: 2 })
        expect(await withStatus("pending")).toEqual(pool.licenses.map((l: any) => l.id))
      })

      it("searches by key prefix, trimmed and upper-cased", async () => {
        const product = unique()
        const a = await create({ product_id: product, license_key: `S${product}-AAAA-BBBB-CCCC` })
        const b = await create({ product_id: product, license_key: `S${product}-AAAB-BBBB-CCCC` })
        await create({ product_id: product, license_key: `T${product}-AAAA-BBBB-CCCC` })
        const search = async (q: string, total: number) =>
          expectList(await app.call("GET", `/licenses?product_id=${product}&search=${encodeURIComponent(q)}`), "licenses", {
            total
          }).map((l: any) => l.id)
        expect(await search(`S${product}-AAA`, 2)).toEqual([b.id, a.id])
        expect(await search(` s${product}-aaaa `, 1)).toEqual([a.id])
        expect(await search(`S${product}-AAAA-BBBB-CCCC-`, 0)).toEqual([])
        // LIKE wildcards are plain characters here.
        expect(await search("%", 0)).toEqual([])
        expect(await search(`S${product}_`, 0)).toEqual([])
      })

      it("filters by expiry with strict bounds; perpetual licenses never match", async () => {
        const product = unique()
        const early = await create({ product_id: product, expires_at: "2030-01-01T00:00:00Z" })
        const late = await create({ product_id: product, expires_at: "2031-01-01T00:00:00Z" })
        await create({ product_id: product })
        const ids = async (query: string) => {
          const res = await app.call("GET", `/licenses?product_id=${product}&${query}`)
          return expectList(res, "licenses", { total: res.body.meta.total }).map((l: any) => l.id)
        }
        expect(await ids("expires_before=2030-06-01T00:00:00Z")).toEqual([early.id])
        expect(await ids("expires_before=2030-01-01T00:00:00Z")).toEqual([])
        expect(await ids(`expires_after=${encodeURIComponent("2030-01-01T02:00:00+02:00")}`)).toEqual([late.id])
        expect(await ids("expires_after=2029-01-01T00:00:00Z&expires_before=2040-01-01T00:00:00Z")).toEqual([late.id, early.id])
      })

      it("orders by id, created_at or expires_at, asc or desc (default id desc; perpetual sorts as the latest)", async () => {
        const product = unique()
        const a = await create({ product_id: product, expires_at: "2033-01-01T00:00:00Z" })
        const b = await create({ product_id: product })
        const c = await create({ product_id: product, expires_at: "2032-01-01T00:00:00Z" })
        const order = async (query: string) =>
          expectList(await app.call("GET", `/licenses?product_id=${product}${query}`), "licenses", { total: 3 }).map((l: any) => l.id)
        expect(await order("")).toEqual([c.id, b.id, a.id])
        expect(await order("&orderby=id&order=asc")).toEqual([a.id, b.id, c.id])
        expect(await order("&order=asc")).toEqual([a.id, b.id, c.id])
        expect(await order("&orderby=created_at&order=asc")).toEqual([a.id, b.id, c.id].sort((x, y) => x - y))
        expect(await order("&orderby=expires_at&order=asc")).toEqual([c.id, a.id, b.id])
        expect(await order("&orderby=expires_at&order=desc")).toEqual([b.id, a.id, c.id])
      })

      it("pages: total, page, per_page, total_pages; per_page above 100 is 100; nothing found has 0 pages", async () => {
        const product = unique()
        const made: Array<number> = []
        for (let i = 0; i < 5; i++) made.push((await create({ product_id: product })).id)
        const newestFirst = [...made].reverse()
        const page = async (query: string, meta: { total: number; page?: number; per_page?: number }) =>
          expectList(await app.call("GET", `/licenses?product_id=${product}&${query}`), "licenses", meta).map((l: any) => l.id)
        expect(await page("per_page=2", { total: 5, per_page: 2 })).toEqual(newestFirst.slice(0, 2))
        expect(await page("per_page=2&page=3", { total: 5, page: 3, per_page: 2 })).toEqual(newestFirst.slice(4))
        expect(await page("per_page=2&page=4", { total: 5, page: 4, per_page: 2 })).toEqual([])
        expect(await page("per_page=1000", { total: 5, per_page: 100 })).toEqual(newestFirst)
        expect(await page("", { total: 5 })).toEqual(newestFirst)
        expectList(await app.call("GET", `/licenses?product_id=${unique()}`), "licenses", { total: 0 })
      })

      it("refuses bad paging and filter values with 400, naming each", async () => {
        for (const query of ["page=0", "page=-1", "page=1.5", "page=abc", "page=", "page=1e2"]) {
          expectInvalid(await app.call("GET", `/licenses?${query}`), "page")
        }
        for (const query of ["per_page=0", "per_page=2.5", "per_page=x"]) {
          expectInvalid(await app.call("GET", `/licenses?${query}`), "per_page")
        }
        expectInvalid(
          await app.call("GET", "/licenses?status=gone&orderby=key&order=up&product_id=0&expires_before=tomorrow&expires_after=2030-01-01"),
          "status",
          "orderby",
          "order",
          "product_id",
          "expires_before",
          "expires_after"
        )
      })
    })
  })
}
