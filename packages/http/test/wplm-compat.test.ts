/**
 * The WPLM compatibility namespace (CONTRACT §17, issue 28) driven over the wire as the WPLM client libraries drive
 * it, on the memory store, PGlite and PostgreSQL (DATABASE_URL), through both transports (fast path and Effect
 * stack). What those libraries do, re-stated from their documented behaviour (not their code):
 * - they send the key as the user typed it and hash that raw text (SHA-256 hex) against the CRL's `revoked_keys`;
 * - every `signed_payload` they receive whose signature verifies replaces the one they cached;
 * - offline, the cached payload entitles when its signature verifies, `valid` is true, `expires` is null or in the
 *   future, and the key's hash is not in the last CRL's `revoked_keys`; they never read `exp` nor `suspended_keys`;
 * - statuses are integers.
 */
import { createHash, createPublicKey, verify } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { serviceUrl } from "../../../test/support/services.js"
import { admin } from "./support/Admin.js"
import { startApp, type TestApp } from "./support/App.js"

const DAY = 86_400_000
const url = serviceUrl("DATABASE_URL")

const decode = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8"))

/** A WPLM client library's state and checks, re-stated. */
class WplmLibrary {
  cached: string | null = null
  crl: { revoked_keys: ReadonlyArray<string> } = { revoked_keys: [] }
  readonly app: TestApp
  readonly pem: string
  readonly licenseKey: string
  readonly fingerprint: string | undefined
  constructor(app: TestApp, pem: string, licenseKey: string, fingerprint?: string) {
    this.app = app
    this.pem = pem
    this.licenseKey = licenseKey
    this.fingerprint = fingerprint
  }

  static async start(app: TestApp, licenseKey: string, fingerprint?: string) {
    const { pem } = (await wplm(app, "GET", "/public-key")).body.data
    return new WplmLibrary(app, pem, licenseKey, fingerprint)
  }

  /** The payload of a token whose signature verifies, else undefined. */
  verified(token: string): any {
    const [body, signature] = token.split(".")
    if (body === undefined || signature === undefined) return undefined
    const ok = verify(null, Buffer.from(body, "ascii"), createPublicKey(this.pem), Buffer.from(signature, "base64url"))
    return ok ? decode(body) : undefined
  }

  /** Online validation: any verified `signed_payload` replaces the cached one. */
  async validate() {
    const res = await wplm(this.app, "POST", "/validate", {
      license_key: this.licenseKey,
      ...(this.fingerprint === undefined ? {} : { fingerprint: this.fingerprint })
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const token = res.body.data.signed_payload
    if (typeof token === "string" && this.verified(token) !== undefined) this.cached = token
    return res.body.data
  }

  async refreshCrl() {
    const res = await wplm(this.app, "GET", "/crl")
    const payload = this.verified(res.body.data.crl)
    expect(payload).toBeDefined()
    this.crl = payload
  }

  /** The offline check on the cached payload at `now`. */
  offlineValid(now = Date.now()): boolean {
    if (this.cached === null) return false
    const payload = this.verified(this.cached)
    if (payload === undefined || payload.valid !== true) return false
    if (payload.expires !== null && Date.parse(payload.expires) <= now) return false
    const hash = createHash("sha256").update(this.licenseKey, "utf8").digest("hex")
    return !this.crl.revoked_keys.includes(hash)
  }
}

/** A call to `{rest_root}/wplm/v1{path}`, without credentials. */
const wplm = async (app: TestApp, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${app.origin}/api/wplm/v1${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  })
  return { status: res.status, headers: res.headers, body: await res.json() as any }
}

const stores = [
  { name: "memory", start: (fastPath: boolean) => startApp("memory", { settings: { wplmCompat: true, fastPath } }) },
  { name: "pglite", start: (fastPath: boolean) => startApp("pglite", { settings: { wplmCompat: true, fastPath } }) },
  ...(url === "" ? [] : [{
    name: "postgres",
    start: (fastPath: boolean) => startApp("pglite", { storeLayer: freshPostgresStore(url), settings: { wplmCompat: true, fastPath } })
  }])
]

for (const store of stores) {
  for (const fastPath of [true, false]) {
    describe(`wplm/v1 on ${store.name}, ${fastPath ? "fast path" : "Effect stack"}`, () => {
      let app: TestApp
      let manage: ReturnType<typeof admin>
      beforeAll(async () => {
        app = await store.start(fastPath)
        manage = admin(app)
      })
      afterAll(() => app?.close())

      /** A license with an activated machine, and a library that validated it online once. */
      const entitled = async (fields: Parameters<typeof manage.createLicense>[0] = {}) => {
        const { key } = await manage.createLicense({ max_activations: 2, ...fields })
        const fingerprint = `fp-${Math.random().toString(36).slice(2)}`
        const activated = await wplm(app, "POST", "/activate", { license_key: key, fingerprint })
        expect(activated.status, JSON.stringify(activated.body)).toBe(201)
        const library = await WplmLibrary.start(app, key, fingerprint)
        await library.validate()
        await library.refreshCrl()
        expect(library.offlineValid()).toBe(true)
        return { key, fingerprint, machineId: activated.body.data.id as number, library }
      }

      const actions = {
        suspend: ({ key }: { key: string }) => manage.suspend(key),
        revoke: ({ key }: { key: string }) => manage.revoke(key),
        terminate: ({ key }: { key: string }) => manage.terminate(key),
        deactivate: async ({ key, fingerprint }: { key: string; fingerprint: string }) => {
          const res = await wplm(app, "POST", "/deactivate", { license_key: key, fingerprint })
          expect(res.status, JSON.stringify(res.body)).toBe(200)
          expect(res.body.data.machine.status).toBe(2)
        },
        "machine revoke": ({ machineId }: { machineId: number }) => manage.revokeMachine(machineId)
      }

      for (const [name, act] of Object.entries(actions)) {
        it(`after ${name}, the next online answer makes the cached payload deny offline`, async () => {
          const subject = await entitled()
          await act(subject)
          const answer = await subject.library.validate()
          expect(answer.valid).toBe(false)
          const payload = subject.library.verified(answer.signed_payload)
          expect(payload).toMatchObject({ typ: "license", valid: false, key: subject.key })
          expect(Date.parse(payload.expires)).toBeLessThan(Date.now())
          expect(subject.library.offlineValid()).toBe(false)
        })
      }

      for (const name of ["suspend", "revoke", "terminate"] as const) {
        it(`after ${name}, the CRL alone makes the cached payload deny offline`, async () => {
          const subject = await entitled()
          await actions[name](subject)
          await subject.library.refreshCrl()
          expect(subject.library.offlineValid()).toBe(false)
        })
      }

      it("a valid license stays valid offline until its expiry plus grace, before the token's exp", async () => {
        const expiresAt = Date.now() + DAY
        const { library } = await entitled({ expires_at: new Date(expiresAt).toISOString(), grace_days: 2 })
        const payload = library.verified(library.cached!)
        expect(Date.parse(payload.expires)).toBe(expiresAt + 2 * DAY)
        expect(library.offlineValid(expiresAt + 2 * DAY - 60_000)).toBe(true)
        expect(library.offlineValid(expiresAt + 2 * DAY + 1000)).toBe(false)
      })

      it("a perpetual license stays valid offline until the token's exp, not forever", async () => {
        const { library } = await entitled()
        const payload = library.verified(library.cached!)
        expect(payload.expires).toBe(new Date(payload.exp * 1000).toISOString())
        expect(library.offlineValid(payload.exp * 1000 - 60_000)).toBe(true)
        expect(library.offlineValid(payload.exp * 1000 + 1000)).toBe(false)
      })

      it("answers integer statuses with status_label, and heartbeat's machine at the top level", async () => {
        const { fingerprint, key } = await entitled()
        const answer = await wplm(app, "POST", "/validate", { license_key: key, fingerprint })
        expect(answer.body.data.license).toMatchObject({ status: 1, status_label: "active", source: 2 })
        expect(answer.body.data.machine).toMatchObject({ status: 1, status_label: "active" })
        const beat = await wplm(app, "POST", "/heartbeat", { license_key: key, fingerprint })
        expect(beat.status, JSON.stringify(beat.body)).toBe(200)
        expect(beat.body.data).toMatchObject({ fingerprint, status: 1, status_label: "active" })
        expect(typeof beat.body.data.certificate).toBe("string")
        expect(beat.body.data).not.toHaveProperty("machine")
        await manage.suspend(key)
        const suspended = await wplm(app, "POST", "/validate", { license_key: key })
        expect(suspended.body.data.license).toMatchObject({ status: 4, status_label: "suspended" })
      })

      it("refuses a key not sent trimmed and upper-case on every key-reading route, which lm/v1 accepts", async () => {
        const { fingerprint, key } = await entitled()
        for (const raw of [key.toLowerCase(), ` ${key}`]) {
          for (const path of ["/validate", "/activate", "/deactivate", "/heartbeat"]) {
            const res = await wplm(app, "POST", path, { license_key: raw, fingerprint })
            expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(400)
            expect(res.body).toMatchObject({ success: false, code: "rest_invalid_param", data: { status: 400, params: { license_key: expect.any(String) } } })
          }
        }
        const lm = await app.call("POST", "/validate", { body: { license_key: key.toLowerCase() }, auth: null })
        expect(lm.body.data.valid).toBe(true)
      })

      it("lists suspended keys in the CRL's revoked_keys there, and only there", async () => {
        const { key } = await manage.createLicense()
        await manage.suspend(key)
        const hash = createHash("sha256").update(key).digest("hex")
        const library = await WplmLibrary.start(app, key)
        await library.refreshCrl()
        expect(library.crl.revoked_keys).toContain(hash)
        const lm = await app.call("GET", "/crl", { auth: null })
        const lmCrl = decode(lm.body.data.crl.split(".")[0])
        expect(lmCrl.revoked_keys).not.toContain(hash)
        expect(lmCrl.suspended_keys).toContain(hash)
      })

      it("allows any origin, as the lm/v1 public routes do", async () => {
        const { key } = await manage.createLicense()
        const res = await fetch(`${app.origin}/api/wplm/v1/validate`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: "https://app.example" },
          body: JSON.stringify({ license_key: key })
        })
        expect(res.status).toBe(200)
        expect(res.headers.get("access-control-allow-origin")).toBe("*")
        const crl = await fetch(`${app.origin}/api/wplm/v1/crl`, { headers: { origin: "https://app.example" } })
        expect(crl.headers.get("access-control-allow-origin")).toBe("*")
      })

      it("leaves lm/v1's answers unchanged", async () => {
        const { key } = await manage.createLicense({ expires_at: new Date(Date.now() + DAY).toISOString(), grace_days: 2 })
        const valid = await app.call("POST", "/validate", { body: { license_key: key }, auth: null })
        expect(valid.body.data.license).toMatchObject({ status: "inactive", source: "api" })
        expect(decode(valid.body.data.signed_payload.split(".")[0]).expires).toBe(valid.body.data.license.expires_at)
        await manage.suspend(key)
        const refused = await app.call("POST", "/validate", { body: { license_key: key }, auth: null })
        expect(refused.body.data.signed_payload).toBeNull()
      })
    })
  }
}

describe("wplm/v1 without LM_WPLM_COMPAT", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp("memory")
  })
  afterAll(() => app?.close())

  it("is not served", async () => {
    for (const [method, path] of [["POST", "/validate"], ["GET", "/crl"], ["GET", "/public-key"]] as const) {
      const res = await wplm(app, method, path, method === "POST" ? { license_key: "AAAA-BBBB-CCCC-DDDD" } : undefined)
      expect(res.status).toBe(404)
      expect(res.body.code).toBe("rest_no_route")
    }
  })
})
