import { createHash, createPublicKey, sign as nodeSign, verify as nodeVerify } from "node:crypto"
import { inspect } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { verifyToken } from "../src/verify/index.js"
import { base64Encode, base64UrlDecode, base64UrlEncode, toHex, utf8Decode } from "../src/verify/encoding.js"
import {
  InvalidSigningKey,
  keyRingFromStored,
  makeKeyRing,
  parseSigningKey,
  publicKeyBase64,
  publicKeyPem,
  publishedKeys,
  seedBase64,
  signingKeyFromSeed,
  seedPkcs8
} from "../src/signing/SigningKey.js"
import { makeNobleSigner, makeNodeCryptoSigner, Signer } from "../src/signing/Signer.js"
import * as Token from "../src/signing/Token.js"

const hex = (s: string) => Uint8Array.from(Buffer.from(s, "hex"))

// RFC 8032 §7.1, test 1: the empty message.
const RFC_SEED = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
const RFC_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
const RFC_SIGNATURE = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"

const seedOf = (n: number) => Uint8Array.from({ length: 32 }, (_, i) => (n + i * 7) & 255)

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) // 1795348800 s
const T0S = T0 / 1000

const decodeHead = (token: string) => utf8Decode(base64UrlDecode(token.split(".")[0]!)!)!

describe("Token: canonical JSON", () => {
  const kid = "0123456789abcdef"

  it("license: exact string, contract key order, no whitespace, exp = iat + 7 days", () => {
    const claims = Token.license({
      licenseKey: "ABCD-EFGH-JKLM-NPQR",
      licenseId: 7,
      productId: 3,
      status: "active",
      valid: true,
      code: "valid",
      expiresAt: Date.UTC(2027, 0, 1),
      graceDays: 3,
      maxActivations: 5,
      fingerprint: "fp-1",
      nonce: "n1",
      issuedAt: T0 + 999
    })
    expect(Token.payloadJson(claims, kid)).toBe(
      `{"v":1,"typ":"license","kid":"0123456789abcdef","key":"ABCD-EFGH-JKLM-NPQR","lid":7,"pid":3,` +
        `"status":"active","valid":true,"code":"valid","expires":"2027-01-01T00:00:00.000Z","grace_days":3,` +
        `"max":5,"fp":"fp-1","nonce":"n1","iat":1795348800,"exp":1795953600,"ent":[]}`
    )
  })

  it("license: nulls, an integer nonce, a custom TTL and characters that need escaping", () => {
    const claims = Token.license({
      licenseKey: "K",
      licenseId: 1,
      productId: null,
      status: "expired",
      valid: false,
      code: "license_expired",
      expiresAt: null,
      graceDays: 0,
      maxActivations: null,
      fingerprint: "a\"b\\c\u00e9",
      nonce: 42,
      issuedAt: T0,
      ttlSeconds: 60,
      entitlements: ["export", "team:admin"]
    })
    expect(Token.payloadJson(claims, kid)).toBe(
      `{"v":1,"typ":"license","kid":"0123456789abcdef","key":"K","lid":1,"pid":null,"status":"expired",` +
        `"valid":false,"code":"license_expired","expires":null,"grace_days":0,"max":null,` +
        `"fp":"a\\"b\\\\c\u00e9","nonce":42,"iat":1795348800,"exp":1795348860,"ent":["export","team:admin"]}`
    )
    // canonical means: exactly what JSON.stringify writes for an object built in this order
    expect(JSON.stringify(JSON.parse(Token.payloadJson(claims, kid)))).toBe(Token.payloadJson(claims, kid))
  })

  it("license: each token states the codes of its own list, however often lists are signed and in what order", () => {
    const base = {
      licenseKey: "K",
      licenseId: 1,
      productId: null,
      status: "active",
      valid: true,
      code: "valid",
      expiresAt: null,
      graceDays: 0,
      maxActivations: null,
      fingerprint: null,
      nonce: null,
      issuedAt: T0
    }
    const pro = ["export", "sync"]
    const team = ["export", "sync", "team"]
    const entOf = (entitlements: ReadonlyArray<string>) =>
      JSON.parse(Token.payloadJson(Token.license({ ...base, entitlements }), kid)).ent
    for (const [list, want] of [[pro, ["export", "sync"]], [team, ["export", "sync", "team"]], [pro, ["export", "sync"]], [[], []], [["sync"], ["sync"]]] as const) {
      expect(entOf(list)).toEqual(want)
    }
  })

  it("machine: exact string; node-locked exp = iat + 30 days", () => {
    const claims = Token.machine({
      licenseKey: "ABCD-EFGH-JKLM-NPQR",
      licenseId: 7,
      productId: 3,
      machineId: 11,
      fingerprint: "fp-1",
      expiresAt: null,
      maxActivations: 2,
      graceDays: 0,
      issuedAt: T0,
      leaseExpiresAt: null
    })
    expect(Token.payloadJson(claims, kid)).toBe(
      `{"v":1,"typ":"machine","kid":"0123456789abcdef","key":"ABCD-EFGH-JKLM-NPQR","lid":7,"pid":3,"mid":11,` +
        `"fp":"fp-1","expires":null,"max":2,"iat":1795348800,"exp":1797940800}`
    )
  })

  it("crl: exact string", () => {
    const claims = Token.crl({
      seq: 9,
      revokedKeys: ["aa", "bb"],
      suspendedKeys: [],
      revokedFingerprints: ["cc"],
      revokedMachines: [4, 5],
      generatedAt: T0 - 1000,
      issuedAt: T0
    })
    expect(Token.payloadJson(claims, kid)).toBe(
      `{"v":1,"typ":"crl","kid":"0123456789abcdef","seq":9,"revoked_keys":["aa","bb"],"suspended_keys":[],` +
        `"revoked_fingerprints":["cc"],"revoked_machines":[4,5],"generated_at":"2026-11-22T11:59:59.000Z",` +
        `"iat":1795348800}`
    )
  })

  it("download: exact string; exp = iat + 300 s by default", () => {
    const claims = Token.download({ releaseId: 12, licenseId: 7, issuedAt: T0 })
    expect(Token.payloadJson(claims, kid)).toBe(
      `{"v":1,"typ":"download","kid":"0123456789abcdef","rid":12,"lid":7,"iat":1795348800,"exp":1795349100}`
    )
  })
})

describe("Token: machine certificate exp", () => {
  const DAY = 86_400
  it("floating: the lease end", () => {
    expect(Token.machineCertificateExp({ iat: 1000, leaseExpiresAt: 1600, licenseExpiresAt: null, graceDays: 0 }))
      .toBe(1600)
  })
  it("node-locked: iat + 30 days", () => {
    expect(Token.machineCertificateExp({ iat: 1000, leaseExpiresAt: null, licenseExpiresAt: null, graceDays: 0 }))
      .toBe(1000 + 30 * DAY)
  })
  it("never past the license's expiry plus grace days", () => {
    expect(
      Token.machineCertificateExp({ iat: 1000, leaseExpiresAt: null, licenseExpiresAt: 1000 + DAY, graceDays: 2 })
    ).toBe(1000 + 3 * DAY)
    expect(Token.machineCertificateExp({ iat: 1000, leaseExpiresAt: 9000, licenseExpiresAt: 5000, graceDays: 0 }))
      .toBe(5000)
  })
  it("the machine constructor applies it from epoch milliseconds", () => {
    const claims = Token.machine({
      licenseKey: "K",
      licenseId: 1,
      productId: null,
      machineId: 2,
      fingerprint: "f",
      expiresAt: T0 + 10 * DAY * 1000,
      maxActivations: null,
      graceDays: 1,
      issuedAt: T0,
      leaseExpiresAt: null
    })
    expect(claims.exp).toBe(T0S + 11 * DAY)
    expect(Token.machine({ ...claimsInput(), leaseExpiresAt: T0 + 600_500 }).exp).toBe(T0S + 600)
  })
  const claimsInput = () => ({
    licenseKey: "K",
    licenseId: 1,
    productId: null,
    machineId: 2,
    fingerprint: "f",
    expiresAt: null,
    maxActivations: null,
    graceDays: 0,
    issuedAt: T0
  })
})

describe("SigningKey helpers", () => {
  it("derives the RFC 8032 public key; kid is the first 16 hex of SHA-256(public key)", () => {
    const key = signingKeyFromSeed(RFC_SEED)
    expect(toHex(key.publicKey)).toBe(RFC_PUBLIC)
    expect(key.kid).toMatch(/^[0-9a-f]{16}$/)
    expect(key.kid).toBe(createHash("sha256").update(Buffer.from(RFC_PUBLIC, "hex")).digest("hex").slice(0, 16))
  })

  it("publishes the raw key in standard base64 with padding and as SPKI PEM", () => {
    const key = signingKeyFromSeed(RFC_SEED)
    const b64 = publicKeyBase64(key.publicKey)
    expect(b64).toBe(Buffer.from(RFC_PUBLIC, "hex").toString("base64"))
    expect(b64).toMatch(/=$/)
    const pem = publicKeyPem(key.publicKey)
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n$/)
    const fromPem = createPublicKey(pem).export({ format: "jwk" })
    expect(Buffer.from(fromPem.x!, "base64url").toString("hex")).toBe(RFC_PUBLIC)
    const signature = nodeSign(null, Buffer.from("m"), { key: Buffer.from(seedPkcs8(RFC_SEED)), format: "der", type: "pkcs8" })
    expect(nodeVerify(null, Buffer.from("m"), pem, signature)).toBe(true)
  })

  it.effect("parses LM_SIGNING_KEY: base64 of 32 bytes, whitespace and missing padding tolerated", () =>
    Effect.gen(function*() {
      const text = Buffer.from(RFC_SEED).toString("base64")
      const key = yield* parseSigningKey(`  ${text}\n`)
      expect(toHex(key.publicKey)).toBe(RFC_PUBLIC)
      const unpadded = yield* parseSigningKey(text.replace(/=+$/, ""))
      expect(unpadded.kid).toBe(key.kid)
    }))

  it.effect("a seed of the wrong length or bad base64 is a clear InvalidSigningKey", () =>
    Effect.gen(function*() {
      const short = yield* Effect.flip(parseSigningKey(Buffer.alloc(31, 1).toString("base64")))
      expect(short).toBeInstanceOf(InvalidSigningKey)
      expect(short.message).toContain("32-byte")
      expect(short.message).toContain("got 31 bytes")
      const garbage = yield* Effect.flip(parseSigningKey("not base64!"))
      expect(garbage.message).toContain("not valid base64")
    }))

  it.effect("keyRingFromStored: the current row signs, all rows verify; a mismatched kid is refused", () =>
    Effect.gen(function*() {
      const oldKey = signingKeyFromSeed(seedOf(1))
      const newKey = signingKeyFromSeed(seedOf(2))
      const row = (k: typeof oldKey, current: boolean) => ({
        kid: k.kid,
        seed: Buffer.from(seedOf(k === oldKey ? 1 : 2)).toString("base64"),
        publicKey: publicKeyBase64(k.publicKey),
        current
      })
      const ring = yield* keyRingFromStored([row(oldKey, false), row(newKey, true)])
      expect(ring.current.kid).toBe(newKey.kid)
      expect(publishedKeys(ring).map((k) => [k.kid, k.current])).toEqual([[newKey.kid, true], [oldKey.kid, false]])
      const bad = yield* Effect.flip(keyRingFromStored([{ ...row(newKey, true), kid: "ffffffffffffffff" }]))
      expect(bad.message).toContain("does not match")
      const none = yield* Effect.flip(keyRingFromStored([row(oldKey, false)]))
      expect(none.message).toContain("no current")
    }))
})

describe("Signer layers", () => {
  it.effect("both layers produce the RFC 8032 signature of the empty message", () =>
    Effect.gen(function*() {
      for (const make of [makeNodeCryptoSigner, makeNobleSigner]) {
        const signer = yield* make(RFC_SEED)
        expect(toHex(yield* signer.sign(""))).toBe(RFC_SIGNATURE)
        expect(toHex((yield* signer.current).publicKey)).toBe(RFC_PUBLIC)
      }
    }))

  it.effect("signToken: the kid is the signing key's and the signature covers the ASCII first part", () =>
    Effect.gen(function*() {
      const signer = yield* Signer
      const token = yield* signer.signToken(Token.download({ releaseId: 1, licenseId: 2, issuedAt: T0 }))
      const [head, sig] = token.split(".")
      expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{86}$/)
      const key = signingKeyFromSeed(RFC_SEED)
      expect(JSON.parse(decodeHead(token)).kid).toBe(key.kid)
      expect(nodeVerify(null, Buffer.from(head!, "ascii"), publicKeyPem(key.publicKey), Buffer.from(sig!, "base64url")))
        .toBe(true)
    }).pipe(Effect.provide(Signer.layerNodeCrypto(RFC_SEED))))

  it("property: node:crypto and @noble/ed25519 tokens are byte-identical and each verifies the other's", async () => {
    const now = Date.now()
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        claimsArbitrary(now),
        async (seed, claims) => {
          const [node, noble] = await Promise.all([
            Effect.runPromise(makeNodeCryptoSigner(seed)),
            Effect.runPromise(makeNobleSigner(seed))
          ])
          const a = await Effect.runPromise(node.signToken(claims))
          const b = await Effect.runPromise(noble.signToken(claims))
          expect(a).toBe(b)
          const byNode = await Effect.runPromise(node.verifyToken(b))
          const byNoble = await Effect.runPromise(noble.verifyToken(a))
          expect(byNode.ok).toBe(true)
          expect(byNoble.ok).toBe(true)
          const keys = await Effect.runPromise(node.publishedKeys)
          const client = await verifyToken(a, keys)
          expect(client.ok).toBe(true)
          if (client.ok) expect(client.payload).toEqual({ ...claims, kid: keys[0]!.kid })
        }
      ),
      { numRuns: 60 }
    )
  })

  it.effect("verifyToken on the server uses the Clock: expired after exp, not yet valid beyond the drift", () =>
    Effect.gen(function*() {
      const signer = yield* Signer
      const token = yield* signer.signToken(Token.download({ releaseId: 1, licenseId: 2, issuedAt: T0 }))
      yield* TestClock.setTime(T0 + 300_000)
      expect((yield* signer.verifyToken(token, { type: "download" })).ok).toBe(true)
      yield* TestClock.setTime(T0 + 301_000)
      expect(yield* signer.verifyToken(token)).toMatchObject({ ok: false, reason: "expired" })
      yield* TestClock.setTime(T0 - 301_000)
      expect(yield* signer.verifyToken(token)).toMatchObject({ ok: false, reason: "not_yet_valid" })
      yield* TestClock.setTime(T0)
      expect(yield* signer.verifyToken(token, { type: "license" })).toMatchObject({ ok: false, reason: "wrong_type" })
      expect(yield* signer.verifyToken("x.y")).toEqual({ ok: false, reason: "malformed" })
    }).pipe(Effect.provide(Signer.layerNodeCrypto(RFC_SEED))))

  it.effect("rotation: setKeyRing switches the signing key; tokens of the old key still verify", () =>
    Effect.gen(function*() {
      const oldKey = signingKeyFromSeed(seedOf(1))
      const newKey = signingKeyFromSeed(seedOf(2))
      for (const make of [makeNodeCryptoSigner, makeNobleSigner]) {
        const signer = yield* make(makeKeyRing(oldKey))
        yield* TestClock.setTime(T0)
        const before = yield* signer.signToken(Token.download({ releaseId: 1, licenseId: 2, issuedAt: T0 }))
        yield* signer.setKeyRing(makeKeyRing(newKey, [oldKey]))
        const after = yield* signer.signToken(Token.download({ releaseId: 1, licenseId: 2, issuedAt: T0 }))
        expect(JSON.parse(decodeHead(before)).kid).toBe(oldKey.kid)
        expect(JSON.parse(decodeHead(after)).kid).toBe(newKey.kid)
        expect((yield* signer.current).kid).toBe(newKey.kid)
        expect((yield* signer.verifyToken(before)).ok).toBe(true)
        expect((yield* signer.verifyToken(after)).ok).toBe(true)
        expect(yield* signer.publishedKeys).toEqual([
          { kid: newKey.kid, public_key: publicKeyBase64(newKey.publicKey), current: true },
          { kid: oldKey.kid, public_key: publicKeyBase64(oldKey.publicKey), current: false }
        ])
        // once the old key is dropped from the ring its tokens are refused
        yield* signer.setKeyRing(makeKeyRing(newKey))
        expect(yield* signer.verifyToken(before)).toEqual({ ok: false, reason: "unknown_kid" })
      }
    }))

  it.effect("a ring whose public key does not belong to its seed is refused when the layer is built", () =>
    Effect.gen(function*() {
      const a = signingKeyFromSeed(seedOf(1))
      const b = signingKeyFromSeed(seedOf(2))
      const forged = makeKeyRing({ ...a, publicKey: b.publicKey, kid: b.kid })
      for (const make of [makeNodeCryptoSigner, makeNobleSigner]) {
        const exit = yield* Effect.exit(make(forged))
        expect(Exit.isFailure(exit)).toBe(true)
      }
    }))
})

describe("the private seed never shows", () => {
  const SEED = Uint8Array.from({ length: 32 }, (_, i) => 200 + i)
  const forms = [
    toHex(SEED),
    Buffer.from(SEED).toString("base64").replace(/=+$/, ""),
    base64UrlEncode(SEED),
    Array.from(SEED).slice(0, 8).join(","),
    `"0":200,"1":201`
  ]
  // whitespace is dropped first: inspect() lays byte arrays out in padded columns
  const exposed = (text: string) => forms.filter((form) => text.replace(/\s+/g, "").includes(form))
  const views = (value: unknown) => [
    String(value),
    JSON.stringify(value) ?? "",
    inspect(value, { depth: Infinity, showHidden: true, getters: true })
  ]

  it("the forms this test looks for do appear when the seed is printed bare", () => {
    expect(exposed(inspect(SEED))).toEqual([Array.from(SEED).slice(0, 8).join(",")])
    expect(exposed(Buffer.from(SEED).toString("base64"))).toEqual([forms[1]])
    expect(exposed(JSON.stringify(SEED))).toEqual([`"0":200,"1":201`])
  })

  it.effect("not in a SigningKey, a KeyRing, the Signer service of either layer, or its context", () =>
    Effect.gen(function*() {
      const key = signingKeyFromSeed(SEED)
      const ring = makeKeyRing(key)
      const seedText = seedBase64(key)
      for (const value of [key, ring, seedText]) {
        for (const view of views(value)) expect(exposed(view)).toEqual([])
      }
      for (const layer of [Signer.layerNodeCrypto(ring), Signer.layerNoble(SEED)]) {
        const context = yield* Layer.build(layer)
        const service = Context.get(context, Signer)
        for (const value of [service, context, layer]) {
          for (const view of views(value)) expect(exposed(view)).toEqual([])
        }
      }
    }))

  it.effect("not in the errors of a bad key", () =>
    Effect.gen(function*() {
      const tooLong = Buffer.concat([Buffer.from(SEED), Buffer.from([1])]).toString("base64")
      const error = yield* Effect.flip(parseSigningKey(tooLong))
      const stored = yield* Effect.flip(
        keyRingFromStored([{ kid: "x", seed: tooLong, publicKey: "", current: true }])
      )
      for (const value of [error, stored]) {
        for (const view of [...views(value), (value as Error).stack ?? ""]) {
          expect(exposed(view)).toEqual([])
          expect(view).not.toContain(tooLong.slice(0, 20))
        }
      }
    }))
})

/** Random claims of every token type, issued within the last minute of `now`. */
function claimsArbitrary(now: number): fc.Arbitrary<Token.Claims> {
  const text = fc.string({ unit: "binary", maxLength: 40 })
  const id = fc.integer({ min: 1, max: 2 ** 31 })
  const issuedAt = fc.integer({ min: now - 60_000, max: now })
  // still valid while the property runs: expiries and lease ends at least a day ahead
  const expiresAt = fc.option(fc.integer({ min: now + 86_400_000, max: now + 10 ** 11 }), { nil: null })
  return fc.oneof(
    fc.record({
      licenseKey: text,
      licenseId: id,
      productId: fc.option(id, { nil: null }),
      status: fc.constantFrom("active", "inactive", "expired", "suspended"),
      valid: fc.boolean(),
      code: text,
      expiresAt,
      graceDays: fc.integer({ min: 0, max: 365 }),
      maxActivations: fc.option(id, { nil: null }),
      fingerprint: fc.option(text, { nil: null }),
      nonce: fc.option(fc.oneof(fc.string({ maxLength: 64 }), fc.integer()), { nil: null }),
      issuedAt
    }).map(Token.license),
    fc.record({
      licenseKey: text,
      licenseId: id,
      productId: fc.option(id, { nil: null }),
      machineId: id,
      fingerprint: text,
      expiresAt,
      maxActivations: fc.option(id, { nil: null }),
      graceDays: fc.integer({ min: 0, max: 365 }),
      issuedAt,
      leaseExpiresAt: fc.option(fc.integer({ min: now + 86_400_000, max: now + 10 ** 10 }), { nil: null })
    }).map(Token.machine),
    fc.record({
      seq: fc.nat(),
      revokedKeys: fc.array(fc.stringMatching(/^[0-9a-f]{64}$/), { maxLength: 5 }),
      suspendedKeys: fc.array(fc.stringMatching(/^[0-9a-f]{64}$/), { maxLength: 5 }),
      revokedFingerprints: fc.array(fc.stringMatching(/^[0-9a-f]{64}$/), { maxLength: 5 }),
      revokedMachines: fc.array(id, { maxLength: 5 }),
      generatedAt: fc.integer({ min: 0, max: now }),
      issuedAt
    }).map(Token.crl),
    fc.record({ releaseId: id, licenseId: id, issuedAt }).map(Token.download)
  )
}

// Keep the standard-base64 helper honest against Buffer (it builds `public_key`).
describe("encoding", () => {
  it("base64 and base64url match Buffer for every length", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(base64Encode(bytes)).toBe(Buffer.from(bytes).toString("base64"))
        expect(base64UrlEncode(bytes)).toBe(Buffer.from(bytes).toString("base64url"))
        expect(base64UrlDecode(base64UrlEncode(bytes))).toEqual(bytes)
      })
    )
  })
  it("a base64url text with non-zero trailing bits is not accepted", () => {
    // one byte is 8 of the 12 bits of two characters: the 4 left over must be zero
    expect(base64UrlDecode("AA")).toEqual(Uint8Array.of(0))
    expect(base64UrlDecode("AB")).toBeUndefined()
    expect(base64UrlDecode("A")).toBeUndefined()
    expect(base64UrlDecode("AA==")).toBeUndefined()
    expect(base64UrlDecode("A+")).toBeUndefined()
  })
})
