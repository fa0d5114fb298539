/**
 * Issue 28: an SDK no server can fool, against a real `lm serve`. Tokens verify only under the keys pinned into
 * the app: a fake server re-signing with its own key (an in-process proxy), a key written into storage and a
 * replayed older revocation list entitle nothing. A license of another product does not entitle. Tokens are
 * judged on the server's clock, so a skewed device clock is neither refused nor able to extend an entitlement,
 * and a verified online answer resets the rollback floor. A rotation to a key the app already pins keeps it
 * working. An update is downloaded and kept only when its SHA-256 checks out.
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createClient,
  createLicensedApp,
  type LicensedApp,
  type LicensedAppOptions,
  type LmClient,
  memoryStorage,
  notEntitledReasons
} from "@lm/client"
import { fileTarget } from "@lm/client/node"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import {
  fakeServer,
  forgedCrl,
  forgedLicense,
  jsonOf,
  newKeyPair,
  payloadOf,
  type Proxy,
  type Rewrite,
  startProxy
} from "./support/proxy.js"
import { createLicense, startServer, type TestServer } from "./support/server.js"

let server: TestServer
let client: LmClient
/** The server's public keys, as the vendor bundles them into the app. */
let trustedKeys: ReadonlyArray<string>
const proxies: Array<Proxy> = []

beforeAll(async () => {
  server = await startServer("trust")
  client = createClient({ baseUrl: server.origin })
  trustedKeys = (await client.publicKeys()).keys.map((k) => k.public_key)
}, 120_000)

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()))
  await server?.stop()
}, 60_000)

const proxy = async (rewrite: Rewrite) => {
  const started = await startProxy(server.origin, rewrite)
  proxies.push(started)
  return started
}

const DAY = 86_400_000
let devices = 0
const newFingerprint = () => `trust-device-${process.pid}-${++devices}`

/** Settings to change; an `undefined` one is left out (`trustedKeys: undefined`: none pinned). */
type Overrides = { readonly [K in keyof LicensedAppOptions]?: LicensedAppOptions[K] | undefined }

/** A licensed app on a fresh device with its own memory storage and a device clock the test moves. */
const appFor = (licenseKey: string, overrides: Overrides = {}) => {
  const clock = { now: Date.now() }
  const storage = memoryStorage()
  const settings = Object.fromEntries(Object.entries({
    baseUrl: server.origin,
    trustedKeys,
    licenseKey,
    fingerprint: newFingerprint(),
    storage,
    now: () => clock.now,
    ...overrides
  }).filter(([, value]) => value !== undefined)) as unknown as LicensedAppOptions
  /** The same app (device, storage, clock) with other settings: another server, other keys, another build. */
  const variant = (changes: Partial<LicensedAppOptions>) => createLicensedApp({ ...settings, ...changes })
  return { app: createLicensedApp(settings), clock, storage, variant }
}

const online = async (app: LicensedApp) => {
  await app.activate()
  expect(await app.validate()).toMatchObject({ valid: true, code: "valid" })
  expect(await app.entitlement()).toMatchObject({ entitled: true })
}

const reason = async (app: LicensedApp) => {
  const answer = await app.entitlement()
  return answer.entitled ? "entitled" : answer.reason
}

const action = async (key: string, name: string) => {
  const answer = await server.admin("POST", `/licenses/${key}/${name}`, {})
  expect(answer.status, JSON.stringify(answer.body)).toBe(200)
}

describe("pinned keys", () => {
  it("refuses to start without trusted keys unless trust on first use is asked for, and refuses a malformed key", () => {
    const base = { baseUrl: server.origin, licenseKey: "ABCD-EFGH-JKLM-NPQR", fingerprint: "f" }
    expect(() => createLicensedApp(base)).toThrow(expect.objectContaining({ code: "invalid_options" }))
    expect(() => createLicensedApp({ ...base, trustedKeys: [] })).toThrow(expect.objectContaining({ code: "invalid_options" }))
    expect(() => createLicensedApp({ ...base, trustedKeys: ["not a key"] })).toThrow(expect.objectContaining({ code: "invalid_options" }))
    expect(() => createLicensedApp({ ...base, trustOnFirstUse: true })).not.toThrow()
  })

  it("accepts the keys as public_key values or as /public-key's {kid, public_key} entries, and refuses a kid that is not its key's", async () => {
    const key = await createLicense(server)
    const { keys } = await client.publicKeys()
    const entries = appFor(key, { trustedKeys: keys.map(({ kid, public_key }) => ({ kid, public_key })) })
    await online(entries.app)
    const stranger = newKeyPair()
    const wrongKid = entries.variant({ trustedKeys: [{ kid: stranger.kid, public_key: keys[0]!.public_key }] })
    await expect(wrongKid.entitlement()).rejects.toMatchObject({ code: "invalid_options" })
  })

  it("a fake server re-signing with its own key entitles nothing, and leaves the genuine proof as it was", async () => {
    const key = await createLicense(server)
    const device = appFor(key)
    await online(device.app)
    await action(key, "revoke")
    const fake = await proxy(fakeServer(newKeyPair()))
    const fooled = device.variant({ baseUrl: fake.origin })
    await expect(fooled.validate()).rejects.toMatchObject({ code: "verification_failed" })
    await expect(fooled.refresh()).rejects.toMatchObject({ code: "verification_failed" })
    // The genuine server's list, fetched through nothing but the real server, still verifies and names the revocation.
    await device.app.refresh()
    expect(await reason(device.app)).toBe("license_revoked")
  })

  it("a key written into the storage, with a token and a list it signed, does not entitle", async () => {
    const key = await createLicense(server)
    const { app, storage } = appFor(key)
    await online(app)
    await action(key, "suspend")
    await app.refresh()
    expect(await reason(app)).toBe("license_suspended")
    const attacker = newKeyPair()
    const stateKey = `state:${key}`
    const state = JSON.parse(storage.entries.get(stateKey)!)
    const published = [{ kid: attacker.kid, public_key: attacker.publicKey, current: true }]
    storage.entries.set(stateKey, JSON.stringify({
      ...state,
      keys: published,
      firstUseKeys: published,
      licenseToken: forgedLicense(attacker, payloadOf(state.licenseToken)),
      crl: forgedCrl(attacker)
    }))
    expect(await reason(app)).toBe("unknown_kid")
  })

  it("a replayed older revocation list is refused and the newer one kept", async () => {
    const key = await createLicense(server)
    const device = appFor(key)
    await online(device.app)
    const before = await server.admin("GET", "/crl")
    expect(before.status).toBe(200)
    await action(key, "revoke")
    await device.app.refresh()
    expect(await reason(device.app)).toBe("license_revoked")
    const replaying = await proxy(({ path }, answer) =>
      path.endsWith("/crl") ? { ...answer, status: 200, body: Buffer.from(JSON.stringify(before.body)) } : answer
    )
    const replayed = device.variant({ baseUrl: replaying.origin })
    await expect(replayed.refresh()).rejects.toMatchObject({ code: "verification_failed", message: expect.stringMatching(/older than the one kept/) })
    expect(await reason(device.app)).toBe("license_revoked")
  })

  it("with trustOnFirstUse, the first answer's keys are kept and a later server's keys are not taken", async () => {
    const key = await createLicense(server)
    const device = appFor(key, { trustedKeys: undefined, trustOnFirstUse: true })
    await online(device.app)
    const fake = await proxy(fakeServer(newKeyPair()))
    await expect(device.variant({ baseUrl: fake.origin }).validate()).rejects.toMatchObject({ code: "verification_failed" })
    expect(await reason(device.app)).toBe("entitled")
  })
})

describe("product binding", () => {
  it("a license of another product, or of none, does not entitle an app bound to its product", async () => {
    expect(notEntitledReasons.indexOf("product_mismatch")).toBe(notEntitledReasons.indexOf("key_mismatch") + 1)
    const other = await createLicense(server, { product_id: 7 })
    const device = appFor(other, { productId: 8 })
    await device.app.activate()
    expect(await device.app.validate()).toMatchObject({ valid: false, code: "product_mismatch" })
    expect(await reason(device.app)).toBe("product_mismatch")
    // The same license in its own product's app.
    const own = device.variant({ productId: 7 })
    expect(await own.validate()).toMatchObject({ valid: true, code: "valid" })
    expect(await reason(own)).toBe("entitled")

    const none = appFor(await createLicense(server), { productId: 8 })
    await none.app.activate()
    expect(await none.app.validate()).toMatchObject({ valid: false, code: "product_mismatch" })
    expect(await reason(none.app)).toBe("product_mismatch")
  })
})

describe("time: tokens are judged on the server's clock", () => {
  it("a device clock 400 s behind the server is not refused", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key)
    clock.now -= 400_000
    await online(app)
    clock.now += 6 * DAY
    expect(await reason(app)).toBe("entitled")
  })

  it("a device clock 8 days ahead is not refused, and moving it further ahead does not extend the offline window", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key)
    clock.now += 8 * DAY
    await online(app)
    clock.now += 6 * DAY
    expect(await reason(app)).toBe("entitled")
    clock.now += 2 * DAY
    expect(await reason(app)).toBe("token_expired")
  })

  it("a device clock set back while offline is still a rollback", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key)
    clock.now += 8 * DAY
    await online(app)
    clock.now -= 8 * DAY // the device's clock "fixed" while offline: it cannot be told from a rollback
    expect(await reason(app)).toBe("clock_rollback")
  })

  it("a clock once far ahead, then fixed: a verified online answer resets the floor", async () => {
    const key = await createLicense(server)
    const { app, clock } = appFor(key)
    await online(app)
    clock.now += 365 * DAY
    expect(await reason(app)).toBe("token_expired")
    clock.now -= 365 * DAY
    expect(await reason(app)).toBe("clock_rollback")
    expect(await app.validate()).toMatchObject({ valid: true })
    expect(await reason(app)).toBe("entitled")
  })

  it("a server_time that is not the signed time is refused", async () => {
    const key = await createLicense(server)
    const device = appFor(key)
    await device.app.activate()
    const skewed = await proxy(({ path }, answer) => {
      if (!path.endsWith("/validate")) return answer
      const body = jsonOf(answer)
      const later = new Date(Date.parse(body.data.server_time) + 30 * DAY).toISOString()
      return { ...answer, body: Buffer.from(JSON.stringify({ ...body, data: { ...body.data, server_time: later } })) }
    })
    await expect(device.variant({ baseUrl: skewed.origin }).validate()).rejects.toMatchObject({ code: "verification_failed" })
  })
})

describe("updates", () => {
  const artifact = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7 + 3) & 255)
  const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

  const publish = async (productId: number, version: string) => {
    const form = new FormData()
    form.append("product_id", String(productId))
    form.append("version", version)
    form.append("file", new Blob([artifact], { type: "application/octet-stream" }), "app-1.1.0.bin")
    const answer = await fetch(`${server.apiBase}/releases`, {
      method: "POST",
      body: form,
      headers: { authorization: basic(adminKey.consumerKey, adminKey.consumerSecret) }
    })
    expect(answer.status).toBe(201)
  }

  it("checks for an update and downloads it to a file or a Blob, its SHA-256 checked", async () => {
    await publish(31, "1.1.0")
    const key = await createLicense(server, { product_id: 31 })
    const { app } = appFor(key, { productId: 31, device: { app_version: "1.0.0" } })
    await app.activate()
    const update = await app.checkForUpdate()
    expect(update).toMatchObject({ update_available: true, latest_version: "1.1.0", release: { sha256: sha256(artifact) } })
    if (!update.update_available) throw new Error("no update")
    const folder = mkdtempSync(join(tmpdir(), "lm-update-"))
    const path = join(folder, "app.bin")
    expect(await app.download(update, fileTarget(path))).toBe(path)
    expect(sha256(readFileSync(path))).toBe(sha256(artifact))
    expect(readdirSync(folder)).toEqual(["app.bin"])
    const blob = await app.download(await app.checkForUpdate() as typeof update)
    expect(sha256(new Uint8Array(await blob.arrayBuffer()))).toBe(sha256(artifact))
    expect(await app.checkForUpdate({ version: "1.1.0" })).toMatchObject({ update_available: false, release: null })
  })

  it("a download with a corrupted byte is refused and nothing is kept", async () => {
    await publish(32, "1.1.0")
    const key = await createLicense(server, { product_id: 32 })
    const corrupting = await proxy(({ path }, answer) => {
      if (!path.includes("/updates/download")) return answer
      const body = Buffer.from(answer.body)
      body[1000] = body[1000]! ^ 0xff
      return { ...answer, body }
    })
    const { app } = appFor(key, { productId: 32, baseUrl: corrupting.origin, device: { app_version: "1.0.0" } })
    await app.activate()
    const update = await app.checkForUpdate()
    if (!update.update_available) throw new Error("no update")
    const folder = mkdtempSync(join(tmpdir(), "lm-update-"))
    const path = join(folder, "app.bin")
    writeFileSync(path, "the installed version")
    await expect(app.download(update, fileTarget(path))).rejects.toMatchObject({ code: "checksum_mismatch" })
    expect(readdirSync(folder)).toEqual(["app.bin"])
    expect(readFileSync(path, "utf8")).toBe("the installed version")
    await expect(app.download(await app.checkForUpdate() as typeof update)).rejects.toMatchObject({ code: "checksum_mismatch" })
  })
})

// Last: after it the server signs with the next key, which the other tests' apps do not pin.
describe("key rotation with the next key pinned", () => {
  it("an app that pins the next key keeps working through the rotation; one that does not refuses the new tokens", async () => {
    const key = await createLicense(server, { max_activations: 3 })
    const next = newKeyPair()
    const current = trustedKeys
    const shipped = appFor(key, { trustedKeys: [...current, next.publicKey] })
    const older = appFor(key, { trustedKeys: current })
    await online(shipped.app)
    await online(older.app)
    // Rotate: a server process started with the next key's seed makes it current; the earlier key stays accepted.
    const rotated = await server.another({ LM_SIGNING_KEY: next.seed })
    try {
      const published = await createClient({ baseUrl: rotated.origin }).publicKeys()
      expect(published.kid).toBe(next.kid)
      const afterShipped = shipped.variant({ baseUrl: rotated.origin })
      const afterOlder = older.variant({ baseUrl: rotated.origin })
      expect(await reason(afterShipped)).toBe("entitled") // the token of the earlier key
      expect(await afterShipped.validate()).toMatchObject({ valid: true })
      expect(await reason(afterShipped)).toBe("entitled") // a token of the next key
      await expect(afterOlder.validate()).rejects.toMatchObject({ code: "verification_failed" })
      expect(await reason(afterOlder)).toBe("entitled") // its proof of the earlier key holds offline until exp
      // Retire the earlier key: tokens of the next key keep verifying.
      const earlier = published.keys.find((k) => k.kid !== next.kid)!.kid
      await server.cli("signing-keys", "retire", earlier)
      expect(await afterShipped.validate()).toMatchObject({ valid: true })
    } finally {
      await rotated.stop()
    }
  }, 120_000)
})
