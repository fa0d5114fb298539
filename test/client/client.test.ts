/**
 * Issue 18: `@lm/client` against a real `lm serve` (one per file): the Promise API and the typed Effect client,
 * the licensed-application helpers (activate, validate with a checked nonce and signature, heartbeat loop,
 * deactivate on shutdown), and offline entitlement case by case. Times are moved with the SDK's injectable
 * clock, never by sleeping.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createClient,
  createLicensedApp,
  type LicensedApp,
  type LicensedAppOptions,
  LmApi,
  LmError,
  type LmClient,
  memoryStorage,
  type Storage
} from "@lm/client"
import { adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { createLicense, startServer, type TestServer } from "./support/server.js"

let server: TestServer
let client: LmClient
/** The server's public keys, as a vendor bundles them into the app. */
let trustedKeys: ReadonlyArray<string>

beforeAll(async () => {
  server = await startServer("sdk")
  client = createClient({ baseUrl: server.origin })
  trustedKeys = (await client.publicKeys()).keys.map((k) => k.public_key)
}, 120_000)

afterAll(async () => {
  await server?.stop()
}, 60_000)

const DAY = 86_400_000
let devices = 0
const newFingerprint = () => `device-${process.pid}-${++devices}`

/** A licensed app on a fresh device with its own memory storage and a clock the test moves. */
const appFor = (licenseKey: string, overrides: Partial<LicensedAppOptions> = {}) => {
  const clock = { now: Date.now() }
  const storage = memoryStorage()
  const app = createLicensedApp({
    baseUrl: server.origin,
    trustedKeys,
    licenseKey,
    fingerprint: newFingerprint(),
    storage,
    now: () => clock.now,
    ...overrides
  })
  return { app, clock, storage }
}

/** Activates and validates online; the app is entitled offline afterwards. */
const online = async (app: LicensedApp) => {
  const machine = await app.activate()
  const validation = await app.validate()
  expect(validation).toMatchObject({ valid: true, code: "valid" })
  expect(await app.entitlement()).toMatchObject({ entitled: true })
  return machine
}

const reason = async (app: LicensedApp) => {
  const answer = await app.entitlement()
  return answer.entitled ? "entitled" : answer.reason
}

const action = async (key: string, name: string, body: unknown = {}) => {
  const answer = await server.admin("POST", `/licenses/${key}/${name}`, body)
  expect(answer.status, JSON.stringify(answer.body)).toBe(200)
}

describe("the Promise API", () => {
  it("answers every public route with the envelope's data", async () => {
    expect(await client.health()).toMatchObject({ status: "ok" })
    const keys = await client.publicKeys()
    expect(keys.algorithm).toBe("Ed25519")
    expect(keys.keys.map((k) => k.kid)).toContain(keys.kid)
    const key = await createLicense(server, { max_activations: 2 })
    const machine = await client.activate({ license_key: key, fingerprint: "promise-api-1", name: "laptop" })
    expect(machine).toMatchObject({ fingerprint: "promise-api-1", name: "laptop", status: "active" })
    expect(typeof machine.certificate).toBe("string")
    const validation = await client.validate({ license_key: key, fingerprint: "promise-api-1", nonce: "n-1" })
    expect(validation).toMatchObject({ valid: true, code: "valid", nonce: "n-1", signed_refusal: null })
    const beat = await client.heartbeat({ license_key: key, fingerprint: "promise-api-1" })
    expect(beat.machine.id).toBe(machine.id)
    expect((await client.crl()).crl.split(".")).toHaveLength(2)
    expect(await client.deactivate({ license_key: key, fingerprint: "promise-api-1" })).toMatchObject({
      deactivated: true,
      machine: { status: "inactive" }
    })
  })

  it("rejects with an LmError carrying the envelope's code, status and data", async () => {
    const unknown = await client.validate({ license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" }).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(LmError)
    expect(unknown).toMatchObject({ code: "license_not_found", status: 404, data: { status: 404 } })
    // The server's own message, as the envelope carries it (not the code).
    const raw = await fetch(`${server.origin}/api/lm/v1/validate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" })
    })
    expect((unknown as LmError).message).toBe(((await raw.json()) as { message: string }).message)
    expect((unknown as LmError).message).not.toBe("license_not_found")

    const malformed = await client.activate({ license_key: "not a key", fingerprint: "x" }).catch((e: unknown) => e)
    expect(malformed).toMatchObject({ code: "rest_invalid_param", status: 400, data: { params: { license_key: expect.any(String) } } })

    const key = await createLicense(server, { max_activations: 1 })
    await client.activate({ license_key: key, fingerprint: "seat-1" })
    const full = await client.activate({ license_key: key, fingerprint: "seat-2" }).catch((e: unknown) => e)
    expect(full).toMatchObject({ code: "machine_limit_exceeded", status: 422, data: { max_activations: 1, ceiling: 1 } })

    const inactive = await client.heartbeat({ license_key: key, fingerprint: "never-seen" }).catch((e: unknown) => e)
    expect(inactive).toMatchObject({ code: "machine_not_found", status: 404 })
  })

  it("takes the API base the server logs as baseUrl, and says what it wants of anything else", async () => {
    const logged = createClient({ baseUrl: `${server.origin}/api/lm/v1/` })
    expect((await logged.health()).status).toBe("ok")
    for (const baseUrl of ["licensing.example.com", "ftp://licensing.example.com", ""]) {
      expect(() => createClient({ baseUrl })).toThrow(/baseUrl must be the server's origin .* or the API base it logs/)
      expect(() => createClient({ baseUrl })).toThrow(LmError)
    }
  })

  it("says network_error when nothing answers", async () => {
    const nowhere = createClient({ baseUrl: "http://127.0.0.1:1" })
    await expect(nowhere.health()).rejects.toMatchObject({ code: "network_error", status: 0 })
  })
})

describe("the typed Effect client (derived from the API definition)", () => {
  it("calls public and management routes", async () => {
    const program = Effect.gen(function*() {
      const api = yield* LmApi
      const health = yield* api.system.health()
      const created = yield* api.licenses.create({ payload: { max_activations: 3 } })
      const listed = yield* api.licenses.get({ params: { key: created.data.license_key } })
      return { health: health.data.status, max: listed.data.max_activations }
    })
    const result = await Effect.runPromise(program.pipe(Effect.provide(LmApi.layer({ baseUrl: server.origin, credentials: adminKey }))))
    expect(result).toEqual({ health: "ok", max: 3 })
  })
})

describe("licensed-application helpers", () => {
  it("activate, validate and entitlement; shutdown deactivates", async () => {
    const key = await createLicense(server, { max_activations: 1 })
    const { app } = appFor(key)
    const machine = await online(app)
    const loop = app.startHeartbeat({ intervalMs: 50 })
    await app.shutdown()
    expect(await loop.stopped).toEqual({ reason: "stopped" })
    const after = await server.admin("GET", `/machines/${machine.id}`)
    expect(after.body.data).toMatchObject({ status: "inactive", deactivation_reason: "client" })
    expect(await reason(app)).toBe("no_token")
  })

  it("validate refuses an answer that does not echo its nonce, or whose payload does not verify", async () => {
    const key = await createLicense(server)
    const { app } = appFor(key)
    await app.activate()
    const tamper = (change: (answer: Awaited<ReturnType<LmClient["validate"]>>) => object): LmClient => ({
      ...client,
      validate: async (input) => {
        const answer = await client.validate(input)
        return { ...answer, ...change(answer) }
      }
    })
    const replayed = createLicensedApp({
      baseUrl: server.origin,
      trustedKeys,
      licenseKey: key,
      fingerprint: app.fingerprint,
      client: tamper(() => ({ nonce: "an-old-nonce" }))
    })
    await expect(replayed.validate()).rejects.toMatchObject({ code: "verification_failed" })
    const forged = createLicensedApp({
      baseUrl: server.origin,
      trustedKeys,
      licenseKey: key,
      fingerprint: app.fingerprint,
      client: tamper((answer) => ({ signed_payload: answer.signed_payload!.slice(0, -4) + "AAAA" }))
    })
    await expect(forged.validate()).rejects.toMatchObject({ code: "verification_failed" })
  })

  it("the heartbeat loop renews a floating lease", async () => {
    const key = await createLicense(server, { is_floating: true, lease_duration: 120, max_activations: 1 })
    const { app } = appFor(key)
    const machine = await app.activate()
    const first = machine.lease_expires_at!
    const beats: Array<string> = []
    const loop = app.startHeartbeat({ intervalMs: 1100, onBeat: (beat) => beats.push(beat.lease_expires_at!) })
    // Lease ends are whole seconds: two beats a second apart renew it to a later end.
    await eventually(async () => {
      const now = await server.admin("GET", `/machines/${machine.id}`)
      expect(beats.length).toBeGreaterThanOrEqual(2)
      expect(Date.parse(now.body.data.lease_expires_at)).toBeGreaterThan(Date.parse(first))
    }, { timeout: 15_000 })
    loop.stop()
    expect(await loop.stopped).toEqual({ reason: "stopped" })
  })

  it("the heartbeat loop stops and says why when the seat is gone (machine_inactive) or revoked", async () => {
    const key = await createLicense(server, { max_activations: 2 })
    const a = appFor(key).app
    const b = appFor(key).app
    const machineA = await a.activate()
    const machineB = await b.activate()
    const stops: Array<string> = []
    const loopA = a.startHeartbeat({ intervalMs: 20, onStop: (stop) => stops.push(stop.reason) })
    const loopB = b.startHeartbeat({ intervalMs: 20 })
    expect((await server.admin("DELETE", `/machines/${machineA.id}`)).status).toBe(200)
    expect((await server.admin("POST", `/machines/${machineB.id}/revoke`)).status).toBe(200)
    expect(await loopA.stopped).toMatchObject({ reason: "refused", code: "machine_inactive" })
    expect(await loopB.stopped).toMatchObject({ reason: "refused", code: "machine_revoked" })
    expect(stops).toEqual(["refused"])
  })

  it("the heartbeat loop backs off on failures that may pass, then beats again", async () => {
    const key = await createLicense(server)
    const { app: base } = appFor(key)
    await base.activate()
    // A network failure, then a rate limit (which passes, after its retry_after at least), then the server.
    const failures = [new LmError("network_error", 0, "down"), new LmError("rest_rate_limited", 429, "slow down", { status: 429, retry_after: 0 })]
    const flaky: LmClient = {
      ...client,
      heartbeat: (input) => {
        const failure = failures.shift()
        return failure === undefined ? client.heartbeat(input) : Promise.reject(failure)
      }
    }
    const app = createLicensedApp({ baseUrl: server.origin, trustedKeys, licenseKey: key, fingerprint: base.fingerprint, client: flaky })
    const delays: Array<number> = []
    let beats = 0
    const loop = app.startHeartbeat({ minBackoffMs: 10, intervalMs: 10_000, onRetry: (_, ms) => delays.push(ms), onBeat: () => beats++ })
    await eventually(() => expect(beats).toBe(1))
    loop.stop()
    expect(delays).toHaveLength(2)
    // Doubled per failure, with at most a quarter of jitter taken off.
    expect(delays[0]).toBeGreaterThanOrEqual(7.5)
    expect(delays[0]).toBeLessThanOrEqual(10)
    expect(delays[1]).toBeGreaterThanOrEqual(15)
    expect(delays[1]).toBeLessThanOrEqual(20)
  })
})

describe("offline entitlement, case by case", () => {
  it("never activated: the server refuses, nothing entitles", async () => {
    const key = await createLicense(server)
    const { app } = appFor(key)
    expect(await app.validate()).toMatchObject({ valid: false, code: "fingerprint_not_activated", needsActivation: true })
    expect(await reason(app)).toBe("no_token")
  })

  it("suspended: seen on the refreshed CRL offline, and a refusal online drops the token", async () => {
    const key = await createLicense(server)
    const { app } = appFor(key)
    await online(app)
    await action(key, "suspend")
    expect(await reason(app)).toBe("entitled") // nothing refreshed yet: offline, the last proof holds
    await app.refresh()
    expect(await reason(app)).toBe("license_suspended")
    await action(key, "reinstate")
    await app.refresh()
    expect(await reason(app)).toBe("entitled")
    await action(key, "suspend")
    expect(await app.validate()).toMatchObject({ valid: false, code: "license_suspended" })
    expect(await reason(app)).toBe("no_token")
  })

  it("revoked: the CRL lists the key", async () => {
    const key = await createLicense(server)
    const { app } = appFor(key)
    await online(app)
    await action(key, "revoke")
    await app.refresh()
    expect(await reason(app)).toBe("license_revoked")
  })

  it("revoked machine: the CRL lists it", async () => {
    const key = await createLicense(server, { max_activations: 2 })
    const { app } = appFor(key)
    const machine = await online(app)
    expect((await server.admin("POST", `/machines/${machine.id}/revoke`)).status).toBe(200)
    await app.refresh()
    expect(await reason(app)).toBe("machine_revoked")
  })

  it("a key typed in lower case with spaces works online and matches the CRL", async () => {
    const key = await createLicense(server)
    const { app } = appFor(`  ${key.toLowerCase()} `)
    await online(app)
    await action(key, "revoke")
    await app.refresh()
    expect(await reason(app)).toBe("license_revoked")
  })

  it("grace: entitled after expiry within grace_days, not after", async () => {
    const expired = new Date(Date.now() - 3_600_000).toISOString()
    const key = await createLicense(server, { expires_at: expired, grace_days: 2 })
    const { app, clock } = appFor(key)
    await online(app)
    clock.now += DAY
    expect(await reason(app)).toBe("entitled")
    clock.now += DAY + 2 * 3_600_000
    expect(await reason(app)).toBe("license_expired")
  })

  it("exp passed: the token's offline life is over", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key)
    await online(app)
    clock.now += 6 * DAY
    expect(await reason(app)).toBe("entitled")
    clock.now += 2 * DAY
    expect(await reason(app)).toBe("token_expired")
  })

  it("a CRL older than maxCrlAgeSeconds is not enough", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key, { maxCrlAgeSeconds: 3600 })
    await online(app)
    clock.now += 2 * 3_600_000
    expect(await reason(app)).toBe("crl_too_old")
    await app.refresh()
    expect(await reason(app)).toBe("entitled")
  })

  it("clock rolled back: refused below the persisted time floor", async () => {
    const key = await createLicense(server)
    const { app, clock, storage } = appFor(key)
    await online(app)
    clock.now += 2 * DAY
    expect(await reason(app)).toBe("entitled")
    clock.now -= DAY
    expect(await reason(app)).toBe("clock_rollback")
    // The floor is persisted: a new process on the same storage sees the roll-back too.
    const again = createLicensedApp({ baseUrl: server.origin, trustedKeys, licenseKey: key, fingerprint: app.fingerprint, storage, now: () => clock.now })
    expect(await reason(again)).toBe("clock_rollback")
    clock.now += DAY
    expect(await reason(again)).toBe("entitled")
  })

  it("a tampered token does not verify", async () => {
    const key = await createLicense(server)
    const { app, storage } = appFor(key)
    await online(app)
    const stateKey = `state:${key}`
    const state = JSON.parse(storage.entries.get(stateKey)!)
    const [head, signature] = (state.licenseToken as string).split(".")
    const payload = JSON.parse(Buffer.from(head!, "base64url").toString("utf8"))
    const longer = Buffer.from(JSON.stringify({ ...payload, exp: payload.exp + 365 * 86_400 })).toString("base64url")
    storage.entries.set(stateKey, JSON.stringify({ ...state, licenseToken: `${longer}.${signature}` }))
    expect(await reason(app)).toBe("bad_signature")
  })

  it("another device's token does not entitle this device", async () => {
    const key = await createLicense(server, { max_activations: 2 })
    const a = appFor(key)
    const b = appFor(key)
    await online(a.app)
    await copyState(a.storage, b.storage, `state:${key}`)
    expect(await reason(b.app)).toBe("fingerprint_mismatch")
  })

  it("a missing or foreign part of the stored proof is named", async () => {
    const key = await createLicense(server)
    const other = await createLicense(server)
    const { app, storage } = appFor(key)
    await online(app)
    const stateKey = `state:${key}`
    const saved = JSON.parse(storage.entries.get(stateKey)!)
    const check = async (state: object) => {
      storage.entries.set(stateKey, JSON.stringify(state))
      return reason(app)
    }
    const { crl: _crl, ...withoutCrl } = saved
    expect(await check(withoutCrl)).toBe("crl_missing")
    expect(await check({ ...saved, crl: saved.licenseToken })).toBe("crl_invalid")
    expect(await check({ ...saved, licenseToken: "not-a-token" })).toBe("malformed_token")
    // The proof of another license, kept under this license's name.
    const { app: otherApp, storage: otherStorage } = appFor(other, { fingerprint: app.fingerprint })
    await online(otherApp)
    expect(await check(JSON.parse(otherStorage.entries.get(`state:${other}`)!))).toBe("key_mismatch")
    expect(await check(saved)).toBe("entitled")
  })

  it("a refusal token never entitles, even stored in place of a license token", async () => {
    const key = await createLicense(server)
    const { app, storage } = appFor(key)
    await online(app)
    await action(key, "suspend")
    const refused = await client.validate({ license_key: key, fingerprint: app.fingerprint })
    const state = JSON.parse(storage.entries.get(`state:${key}`)!)
    storage.entries.set(`state:${key}`, JSON.stringify({ ...state, licenseToken: refused.signed_refusal }))
    expect(await reason(app)).toBe("wrong_type")
  })
})

const copyState = async (from: Storage, to: Storage, key: string) => {
  const value = await from.get(key)
  await to.set(key, value!)
}
