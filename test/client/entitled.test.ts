/**
 * Issue 29: `@lm/client`'s offline feature checks against a real `lm serve`: `app.entitled(code)` and
 * `entitlement().entitlements` answer from the cached, verified license token — its `ent`, the license's effective
 * codes (its own and its policy's) as of its last online validation, including a token signed before a policy
 * change — and a token of a newer server, with keys appended after `ent`, still entitles.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkEntitlement, createLicensedApp, createClient, memoryStorage } from "@lm/client"
import { Signer, SigningKey, Token } from "@lm/domain"
import { createLicense, startServer, type TestServer } from "./support/server.js"

let server: TestServer
let trustedKeys: ReadonlyArray<string>

beforeAll(async () => {
  server = await startServer("entitled")
  trustedKeys = (await createClient({ baseUrl: server.origin }).publicKeys()).keys.map((k) => k.public_key)
}, 120_000)

afterAll(async () => {
  await server?.stop()
}, 60_000)

let devices = 0
const appFor = (licenseKey: string) => {
  const clock = { now: Date.now() }
  const app = createLicensedApp({
    baseUrl: server.origin,
    trustedKeys,
    licenseKey,
    fingerprint: `entitled-${process.pid}-${++devices}`,
    storage: memoryStorage(),
    now: () => clock.now
  })
  return { app, clock }
}

const admin = async (method: string, route: string, body?: unknown) => {
  const answer = await server.admin(method, route, body)
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300)
  return answer.body.data
}

describe("offline feature checks", () => {
  it("entitled(code) holds for the license's own codes and its policy's, offline, from the verified token", async () => {
    const plan = await admin("POST", "/policies", { name: "Pro", entitlements: ["export", "sync"] })
    const key = await createLicense(server, { policy_id: plan.id, entitlements: ["beta"] })
    const { app } = appFor(key)
    // Before any online validation nothing is entitled.
    expect(await app.entitled("export")).toBe(false)
    await app.activate()
    expect(await app.validate()).toMatchObject({ valid: true })
    const answer = await app.entitlement()
    expect(answer).toMatchObject({ entitled: true, entitlements: ["beta", "export", "sync"] })
    expect(await app.entitled("export")).toBe(true)
    expect(await app.entitled("beta")).toBe(true)
    expect(await app.entitled("team")).toBe(false)
  })

  it("a token signed before a policy change answers as it was signed until the next online validation", async () => {
    const plan = await admin("POST", "/policies", { name: "Changing", entitlements: ["export"] })
    const key = await createLicense(server, { policy_id: plan.id })
    const { app, clock } = appFor(key)
    await app.activate()
    await app.validate()
    expect(await app.entitled("export")).toBe(true)

    await admin("PUT", `/policies/${plan.id}`, { entitlements: ["sync"] })
    // Offline, a day later: the cached token still states what the server signed then.
    clock.now += 86_400_000 / 24
    expect(await app.entitled("export")).toBe(true)
    expect(await app.entitled("sync")).toBe(false)
    // Online again: the new token states the policy's codes as they are now.
    await app.validate()
    expect(await app.entitled("export")).toBe(false)
    expect(await app.entitled("sync")).toBe(true)
    expect(await app.entitlement()).toMatchObject({ entitled: true, entitlements: ["sync"] })
  })
})

describe("tokens of a newer server", () => {
  it("keys appended after ent are ignored: the token entitles with its codes", async () => {
    const key = SigningKey.signingKeyFromSeed(Uint8Array.from({ length: 32 }, (_, i) => i + 5))
    const signer = Effect.runSync(Effect.provide(Effect.service(Signer), Signer.layerNodeCrypto(SigningKey.makeKeyRing(key))))
    const nowSeconds = Math.floor(Date.now() / 1000)
    const claims = Token.license({
      licenseKey: "NEWR-0000-0000-0001",
      licenseId: 1,
      productId: null,
      status: "active",
      valid: true,
      code: "valid",
      expiresAt: null,
      graceDays: 0,
      maxActivations: 1,
      fingerprint: "device-newer",
      nonce: null,
      issuedAt: nowSeconds * 1000,
      entitlements: ["export"]
    })
    const json = Token.payloadJson(claims, key.kid).replace(/\}$/, `,"seats_left":0,"v2":{"tier":"pro"}}`)
    const head = Token.signingInput(json)
    const licenseToken = Token.compact(head, Effect.runSync(signer.sign(Token.signingBytes(head))))
    const crl = Effect.runSync(signer.signToken(Token.crl({
      seq: 1,
      revokedKeys: [],
      suspendedKeys: [],
      revokedFingerprints: [],
      revokedMachines: [],
      generatedAt: nowSeconds * 1000,
      issuedAt: nowSeconds * 1000
    })))
    const checked = await checkEntitlement({ licenseToken, crl, crlFetchedAt: nowSeconds }, {
      licenseKey: "newr-0000-0000-0001",
      fingerprint: "device-newer",
      keys: SigningKey.publishedKeys(SigningKey.makeKeyRing(key)),
      now: nowSeconds
    })
    expect(checked.entitlement).toMatchObject({ entitled: true, entitlements: ["export"] })
  })
})
