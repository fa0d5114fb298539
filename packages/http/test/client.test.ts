/**
 * The public client routes over real HTTP (CONTRACT §4), on the memory store and on PGlite: each route's
 * success, every refusal it can answer, field validation, and the error envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin } from "./support/Admin.js"
import { startApp, type TestApp } from "./support/App.js"
import { eventually } from "../../../test/support/eventually.js"

const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

type Response = { readonly status: number; readonly headers: Headers; readonly body: any }

/** Checks the error envelope: status, code, `data.status` equal to the HTTP status, nothing else at the top. */
const expectError = (res: Response, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body).toMatchObject({ success: false, code, data: { status } })
  expect(typeof res.body.message).toBe("string")
  expect(Object.keys(res.body).sort()).toEqual(["code", "data", "message", "success"])
  expect(res.headers.get("x-request-id")).toMatch(/\S/)
}

/** Checks the success envelope and returns `data`. */
const expectOk = (res: Response, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body.success).toBe(true)
  expect(res.body.meta).toEqual({})
  expect(res.headers.get("x-request-id")).toMatch(/\S/)
  return res.body.data
}

const lastDay = new Date(Date.now() - 2 * 86_400_000).toISOString()

for (const store of ["memory", "pglite"] as const) {
  describe(`client routes on ${store}`, () => {
    let app: TestApp
    let manage: ReturnType<typeof admin>
    /** A public call: no credentials. */
    const post = (path: string, body: unknown, headers?: Record<string, string>) =>
      app.call("POST", path, { body, auth: null, ...(headers === undefined ? {} : { headers }) })
    const activate = (key: string, fingerprint: string, extra: Record<string, unknown> = {}) =>
      post("/activate", { license_key: key, fingerprint, ...extra })

    beforeAll(async () => {
      app = await startApp(store, { blacklist: ["fp:bad-fp"] })
      manage = admin(app)
    })
    afterAll(() => app?.close())

    describe("POST /validate", () => {
      it("validates a license without a fingerprint", async () => {
        const { key } = await manage.createLicense({ max_activations: 2 })
        const data = expectOk(await post("/validate", { license_key: key }))
        expect(data).toMatchObject({
          valid: true,
          code: "valid",
          machine: null,
          needs_activation: false,
          license: { license_key: key, status: "inactive", activation_count: 0, max_activations: 2 }
        })
        expect(typeof data.signed_payload).toBe("string")
        expect(data.signed_refusal).toBeNull()
        expect(data.server_time).toMatch(isoTime)
        expect(data).not.toHaveProperty("nonce")
        expect(Object.keys(data).sort()).toEqual(
          ["code", "license", "machine", "needs_activation", "server_time", "signed_payload", "signed_refusal", "valid"]
        )
      })

      it("trims and upper-cases the key, and ignores credentials and unknown fields", async () => {
        const { key } = await manage.createLicense()
        const res = await app.call("POST", "/validate", {
          body: { license_key: `  ${key.toLowerCase()} `, something_else: 1 },
          auth: "Basic bm90OnZhbGlk"
        })
        expect(expectOk(res).license.license_key).toBe(key)
      })

      it("asks for activation of an unknown fingerprint while a seat is free, and matches an active one", async () => {
        const { key } = await manage.createLicense({ max_activations: 1 })
        const before = expectOk(await post("/validate", { license_key: key, fingerprint: "fp-a" }))
        expect(before).toMatchObject({ valid: false, code: "fingerprint_not_activated", needs_activation: true, machine: null })

        const machine = expectOk(await activate(key, "fp-a"), 201)
        const after = expectOk(await post("/validate", { license_key: key, fingerprint: "fp-a" }))
        expect(after).toMatchObject({
          valid: true,
          code: "valid",
          needs_activation: false,
          machine: { id: machine.id, fingerprint: "fp-a", status: "active" },
          license: { status: "active", activation_count: 1 }
        })

        const full = expectOk(await post("/validate", { license_key: key, fingerprint: "fp-b" }))
        expect(full).toMatchObject({ valid: false, code: "fingerprint_not_activated", needs_activation: false })
      })

      it("echoes a string or integer nonce, and treats null as not sent", async () => {
        const { key } = await manage.createLicense()
        expect(expectOk(await post("/validate", { license_key: key, nonce: "n-123" })).nonce).toBe("n-123")
        expect(expectOk(await post("/validate", { license_key: key, nonce: 42 })).nonce).toBe(42)
        expect(expectOk(await post("/validate", { license_key: key, nonce: null }))).not.toHaveProperty("nonce")
      })

      it("refuses a bad nonce, a malformed key and a missing key with 400 rest_invalid_param", async () => {
        const { key } = await manage.createLicense()
        const long = await post("/validate", { license_key: key, nonce: "x".repeat(65) })
        expectError(long, 400, "rest_invalid_param")
        expect(long.body.data.params).toHaveProperty("nonce")
        expectError(await post("/validate", { license_key: key, nonce: 1.5 }), 400, "rest_invalid_param")

        const malformed = await post("/validate", { license_key: "not a key" })
        expectError(malformed, 400, "rest_invalid_param")
        expect(malformed.body.data.params).toHaveProperty("license_key")

        const missing = await post("/validate", {})
        expectError(missing, 400, "rest_invalid_param")
        expect(missing.body.data.params).toEqual({ license_key: "is required" })

        expectError(await post("/validate", "{not json"), 400, "rest_invalid_json")
      })

      it("answers 404 license_not_found for a well-formed key that does not exist", async () => {
        expectError(await post("/validate", { license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" }), 404, "license_not_found")
      })

      it("answers each refusal with 200, valid false and its code", async () => {
        const code = async (key: string, fingerprint?: string) => {
          const data = expectOk(await post("/validate", { license_key: key, ...(fingerprint === undefined ? {} : { fingerprint }) }))
          expect(data.valid).toBe(false)
          return data.code
        }
        const plain = await manage.createLicense()
        expect(await code(plain.key, "bad-fp")).toBe("blacklisted")

        const terminated = await manage.createLicense()
        await manage.terminate(terminated.key)
        expect(await code(terminated.key)).toBe("license_terminated")

        const revoked = await manage.createLicense()
        await manage.revoke(revoked.key)
        expect(await code(revoked.key)).toBe("license_revoked")

        const suspended = await manage.createLicense()
        await manage.suspend(suspended.key)
        expect(await code(suspended.key)).toBe("license_suspended")

        expect(await code(await manage.pendingKey())).toBe("license_pending")

        const expired = await manage.createLicense({ expires_at: lastDay, grace_days: 0 })
        expect(await code(expired.key)).toBe("license_expired")

        const crowded = await manage.createLicense({ max_activations: 2 })
        expectOk(await activate(crowded.key, "c-1"), 201)
        expectOk(await activate(crowded.key, "c-2"), 201)
        await manage.update(crowded.key, { max_activations: 1 })
        // The order is literal: above its ceiling, even an active machine is refused.
        expect(await code(crowded.key, "c-1")).toBe("machine_limit_exceeded")

        const withRevoked = await manage.createLicense()
        const machine = expectOk(await activate(withRevoked.key, "r-1"), 201)
        await manage.revokeMachine(machine.id)
        expect(await code(withRevoked.key, "r-1")).toBe("machine_revoked")
        expect(await code(withRevoked.key, "r-2")).toBe("fingerprint_not_activated")
      })
    })

    describe("POST /activate", () => {
      it("takes a seat: 201 with the machine, its certificate and the socket's address", async () => {
        const { key, id } = await manage.createLicense({ max_activations: 3 })
        const res = await post(
          "/activate",
          {
            license_key: key,
            fingerprint: "dev-1",
            name: "Work laptop",
            hostname: "laptop.local",
            platform: "linux",
            app_version: "1.2.3",
            components: [{ kind: "cpu", fingerprint: "cpu-1", name: "Ryzen" }, { kind: "disk", fingerprint: "disk-1" }],
            meta: { seat: "A" },
            ip_address: "203.0.113.9"
          },
          { "x-forwarded-for": "198.51.100.7" }
        )
        const data = expectOk(res, 201)
        expect(data).toMatchObject({
          license_id: id,
          fingerprint: "dev-1",
          name: "Work laptop",
          hostname: "laptop.local",
          platform: "linux",
          app_version: "1.2.3",
          ip_address: "127.0.0.1",
          status: "active",
          deactivated_at: null,
          deactivation_reason: null,
          last_heartbeat_at: null,
          lease_expires_at: null,
          meta: { seat: "A" }
        })
        expect(data.activated_at).toMatch(isoTime)
        expect(data.created_at).toMatch(isoTime)
        expect(data.components).toEqual([
          { id: expect.any(Number), kind: "cpu", fingerprint: "cpu-1", name: "Ryzen" },
          { id: expect.any(Number), kind: "disk", fingerprint: "disk-1", name: null }
        ])
        expect(data.certificate).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
      })

      it("answers 200 with the same machine when the fingerprint already holds a seat", async () => {
        const { key } = await manage.createLicense({ max_activations: 1 })
        const first = expectOk(await activate(key, "same"), 201)
        const again = expectOk(await activate(key, "same"), 200)
        expect(again.id).toBe(first.id)
        expect(typeof again.certificate).toBe("string")
        const view = expectOk(await post("/validate", { license_key: key }))
        expect(view.license.activation_count).toBe(1)
      })

      it("refuses with 403 and the refusal code", async () => {
        const plain = await manage.createLicense()
        expectError(await activate(plain.key, "bad-fp"), 403, "blacklisted")

        const terminated = await manage.createLicense()
        await manage.terminate(terminated.key)
        expectError(await activate(terminated.key, "x"), 403, "license_terminated")

        const revoked = await manage.createLicense()
        await manage.revoke(revoked.key)
        expectError(await activate(revoked.key, "x"), 403, "license_revoked")

        const suspended = await manage.createLicense()
        await manage.suspend(suspended.key)
        expectError(await activate(suspended.key, "x"), 403, "license_suspended")

        expectError(await activate(await manage.pendingKey(), "x"), 403, "license_pending")

        const expired = await manage.createLicense({ expires_at: lastDay, grace_days: 0 })
        expectError(await activate(expired.key, "x"), 403, "license_expired")

        const withRevoked = await manage.createLicense()
        const machine = expectOk(await activate(withRevoked.key, "gone"), 201)
        await manage.revokeMachine(machine.id)
        expectError(await activate(withRevoked.key, "gone"), 403, "machine_revoked")
      })

      it("refuses a seat above the ceiling with 422 and the seat numbers", async () => {
        const { key } = await manage.createLicense({ max_activations: 1 })
        expectOk(await activate(key, "one"), 201)
        const res = await activate(key, "two")
        expectError(res, 422, "machine_limit_exceeded")
        expect(res.body.data).toEqual({ status: 422, max_activations: 1, activation_count: 1, ceiling: 1 })

        const overage = await manage.createLicense({ max_activations: 2, overage_strategy: "allow_1_5x" })
        for (const fp of ["o-1", "o-2", "o-3"]) expectOk(await activate(overage.key, fp), 201)
        expect((await activate(overage.key, "o-4")).body.data).toEqual({
          status: 422,
          max_activations: 2,
          activation_count: 3,
          ceiling: 3
        })
      })

      it("answers 404 license_not_found and 400 for a malformed key", async () => {
        expectError(await activate("ZZZZ-ZZZZ-ZZZZ-ZZZY", "x"), 404, "license_not_found")
        expectError(await activate("nope", "x"), 400, "rest_invalid_param")
      })

      it("checks every field", async () => {
        const { key } = await manage.createLicense()
        const bad = async (body: Record<string, unknown>, field: string) => {
          const res = await post("/activate", { license_key: key, fingerprint: "ok", ...body })
          expectError(res, 400, "rest_invalid_param")
          expect(Object.keys(res.body.data.params)).toContain(field)
        }
        const missing = await post("/activate", { license_key: key })
        expectError(missing, 400, "rest_invalid_param")
        expect(missing.body.data.params).toEqual({ fingerprint: "is required" })
        await bad({ fingerprint: "" }, "fingerprint")
        await bad({ fingerprint: "f".repeat(256) }, "fingerprint")
        await bad({ fingerprint: "tab\there" }, "fingerprint")
        await bad({ name: "n".repeat(256) }, "name")
        await bad({ hostname: 7 }, "hostname")
        await bad({ platform: "p".repeat(256) }, "platform")
        await bad({ app_version: "v".repeat(256) }, "app_version")
        await bad({ components: [{ kind: "ram", fingerprint: "r" }] }, "components[0].kind")
        await bad({ components: [{ kind: "cpu" }] }, "components[0].fingerprint")
        await bad({ components: Array.from({ length: 33 }, (_, i) => ({ kind: "custom", fingerprint: `c${i}` })) }, "components")
        await bad({ meta: "text" }, "meta")
        await bad({ meta: { blob: "m".repeat(17 * 1024) } }, "meta")

        // The limits themselves are accepted.
        const edge = await post("/activate", {
          license_key: key,
          fingerprint: "é".repeat(255),
          name: "n".repeat(255),
          components: Array.from({ length: 32 }, (_, i) => ({ kind: "custom", fingerprint: `c${i}` }))
        })
        expect(expectOk(edge, 201).components).toHaveLength(32)
      })
    })

    describe("POST /deactivate", () => {
      it("deactivates by fingerprint, frees the seat, and repeats as the same 200", async () => {
        const { key } = await manage.createLicense({ max_activations: 1 })
        const machine = expectOk(await activate(key, "d-1"), 201)
        const data = expectOk(await post("/deactivate", { license_key: key, fingerprint: "d-1" }))
        expect(data).toMatchObject({
          deactivated: true,
          machine: { id: machine.id, status: "inactive", deactivation_reason: "client" }
        })
        expect(data.machine.deactivated_at).toMatch(isoTime)
        const again = expectOk(await post("/deactivate", { license_key: key, fingerprint: "d-1" }))
        expect(again).toEqual(data)
        expectOk(await activate(key, "d-2"), 201)
      })

      it("deactivates by machine_id", async () => {
        const { key } = await manage.createLicense()
        const machine = expectOk(await activate(key, "d-3"), 201)
        const data = expectOk(await post("/deactivate", { license_key: key, machine_id: machine.id }))
        expect(data.machine).toMatchObject({ id: machine.id, status: "inactive" })
      })

      it("answers 404 machine_not_found for a machine that is not on that license", async () => {
        const one = await manage.createLicense()
        const other = await manage.createLicense()
        const machine = expectOk(await activate(other.key, "elsewhere"), 201)
        expectError(await post("/deactivate", { license_key: one.key, machine_id: machine.id }), 404, "machine_not_found")
        expectError(await post("/deactivate", { license_key: one.key, fingerprint: "elsewhere" }), 404, "machine_not_found")
        expectError(await post("/deactivate", { license_key: one.key, machine_id: 99_999_999 }), 404, "machine_not_found")
        expectError(await post("/deactivate", { license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZX", fingerprint: "x" }), 404, "license_not_found")
      })

      it("needs a fingerprint or a machine_id", async () => {
        const { key } = await manage.createLicense()
        const res = await post("/deactivate", { license_key: key })
        expectError(res, 400, "rest_invalid_param")
        expect(Object.keys(res.body.data.params)).toEqual(["fingerprint"])
        expectError(await post("/deactivate", { license_key: key, machine_id: 0 }), 400, "rest_invalid_param")
      })
    })

    describe("POST /heartbeat", () => {
      it("renews a floating lease and returns a fresh certificate", async () => {
        const { key } = await manage.createLicense({ is_floating: true, lease_duration: 600, heartbeat_interval: 300 })
        const machine = expectOk(await activate(key, "h-1", { app_version: "1.0" }), 201)
        const before = Date.now()
        const data = expectOk(await post("/heartbeat", { license_key: key, fingerprint: "h-1", app_version: "1.1" }))
        expect(Object.keys(data).sort()).toEqual(["certificate", "lease_expires_at", "machine", "next_heartbeat_before"])
        expect(data.machine).toMatchObject({ id: machine.id, app_version: "1.1", status: "active" })
        expect(data.machine.last_heartbeat_at).toMatch(isoTime)
        const lease = Date.parse(data.lease_expires_at)
        expect(lease).toBeGreaterThanOrEqual(before + 600_000 - 1000)
        expect(data.machine.lease_expires_at).toBe(data.lease_expires_at)
        // The next beat is due within the heartbeat interval, before the lease runs out.
        expect(Date.parse(data.next_heartbeat_before)).toBeLessThanOrEqual(lease)
        expect(Date.parse(data.next_heartbeat_before)).toBeGreaterThan(before)
        expect(data.certificate).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
      })

      it("has no lease for a node-locked machine", async () => {
        const { key } = await manage.createLicense()
        expectOk(await activate(key, "h-2"), 201)
        const data = expectOk(await post("/heartbeat", { license_key: key, fingerprint: "h-2" }))
        expect(data.lease_expires_at).toBeNull()
      })

      it("answers 404 machine_not_found for a fingerprint never activated there", async () => {
        const { key } = await manage.createLicense()
        expectError(await post("/heartbeat", { license_key: key, fingerprint: "never" }), 404, "machine_not_found")
        expectError(await post("/heartbeat", { license_key: key }), 400, "rest_invalid_param")
      })

      it("answers 409 machine_inactive for a deactivated machine and one whose lease ran out", async () => {
        const { key } = await manage.createLicense()
        expectOk(await activate(key, "h-3"), 201)
        expectOk(await post("/deactivate", { license_key: key, fingerprint: "h-3" }))
        expectError(await post("/heartbeat", { license_key: key, fingerprint: "h-3" }), 409, "machine_inactive")

        const floating = await manage.createLicense({ is_floating: true, lease_duration: 1 })
        expectOk(await activate(floating.key, "h-4"), 201)
        // Validate does not renew the lease: polled until the 1 s lease has run out.
        await eventually(async () => {
          expect(expectOk(await post("/validate", { license_key: floating.key, fingerprint: "h-4" })).code).toBe("fingerprint_not_activated")
        }, { timeout: 20_000, interval: 50 })
        expectError(await post("/heartbeat", { license_key: floating.key, fingerprint: "h-4" }), 409, "machine_inactive")
      })

      it("answers 403 for a revoked machine and for a license that is not valid", async () => {
        const { key } = await manage.createLicense()
        const machine = expectOk(await activate(key, "h-5"), 201)
        await manage.revokeMachine(machine.id)
        expectError(await post("/heartbeat", { license_key: key, fingerprint: "h-5" }), 403, "machine_revoked")

        const suspended = await manage.createLicense()
        expectOk(await activate(suspended.key, "h-6"), 201)
        await manage.suspend(suspended.key)
        expectError(await post("/heartbeat", { license_key: suspended.key, fingerprint: "h-6" }), 403, "license_suspended")

        const revoked = await manage.createLicense()
        expectOk(await activate(revoked.key, "h-7"), 201)
        await manage.revoke(revoked.key)
        expectError(await post("/heartbeat", { license_key: revoked.key, fingerprint: "h-7" }), 403, "license_revoked")
      })
    })

    describe("GET /crl and GET /public-key", () => {
      it("serves the CRL with an ETag and Cache-Control, without credentials", async () => {
        const res = await app.call("GET", "/crl", { auth: null })
        const data = expectOk(res)
        expect(Object.keys(data).sort()).toEqual(["crl", "generated_at", "kid", "next_update"])
        expect(res.headers.get("etag")).toMatch(/^".+"$/)
        expect(res.headers.get("cache-control")).toBe("public, no-cache")
        expect(data.generated_at).toMatch(isoTime)
        expect(Date.parse(data.next_update)).toBeGreaterThan(Date.now())
      })

      it("serves the public key at /public-key and /public-keyk", async () => {
        const res = await app.call("GET", "/public-key", { auth: "Basic bm90OnZhbGlk" })
        const data = expectOk(res)
        expect(data).toMatchObject({ algorithm: "Ed25519", kid: expect.stringMatching(/^[0-9a-f]{16}$/) })
        expect(Buffer.from(data.public_key, "base64")).toHaveLength(32)
        expect(data.pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/)
        expect(data.keys).toContainEqual({ kid: data.kid, public_key: data.public_key, current: true })
        const alias = await app.call("GET", "/public-keyk", { auth: null })
        expect(expectOk(alias)).toEqual(data)
        // The answer is built once per key ring, but each response still carries its own request id.
        expect(alias.headers.get("x-request-id")).not.toBe(res.headers.get("x-request-id"))
      })
    })

    it("documents the client routes, public, in the OpenAPI document", async () => {
      const doc = (await app.call("GET", "/openapi.json", { auth: null })).body
      const op = (path: string, method: string) => doc.paths[`/api/lm/v1${path}`]?.[method]
      for (const [path, method] of [
        ["/validate", "post"],
        ["/activate", "post"],
        ["/deactivate", "post"],
        ["/heartbeat", "post"],
        ["/crl", "get"],
        ["/public-key", "get"],
        ["/public-keyk", "get"]
      ] as const) {
        expect(op(path, method), path).toBeDefined()
        expect(op(path, method).security ?? [], path).toEqual([])
      }
      expect(Object.keys(op("/activate", "post").responses)).toEqual(expect.arrayContaining(["200", "201", "403", "404", "422"]))
      expect(Object.keys(op("/crl", "get").responses)).toEqual(expect.arrayContaining(["200", "304"]))
      expect(op("/public-keyk", "get").deprecated).toBe(true)
      // Unknown body fields are ignored on these routes, and the document says so.
      expect(op("/validate", "post").requestBody.content["application/json"].schema.additionalProperties).toBe(true)
    })
  })
}
