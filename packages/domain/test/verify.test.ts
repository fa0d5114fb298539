import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { keyIdOf, readCrl, TimeFloor, trustedKeySet, verifyToken } from "../src/verify/index.js"
import { base64UrlDecode, base64UrlEncode, utf8Encode } from "../src/verify/encoding.js"
import { makeKeyRing, publishedKeys, type SigningKey, signingKeyFromSeed } from "../src/signing/SigningKey.js"
import { makeNodeCryptoSigner } from "../src/signing/Signer.js"
import * as Token from "../src/signing/Token.js"

const seedOf = (n: number) => Uint8Array.from({ length: 32 }, (_, i) => (n * 31 + i) & 255)
const oldKey = signingKeyFromSeed(seedOf(1))
const currentKey = signingKeyFromSeed(seedOf(2))
const strangerKey = signingKeyFromSeed(seedOf(3))

const signerOf = (key: SigningKey) => Effect.runSync(makeNodeCryptoSigner(makeKeyRing(key)))
const sign = (key: SigningKey, claims: Token.Claims) => Effect.runSync(signerOf(key).signToken(claims))

/** What `/public-key` lists after one rotation: the current key and the old one. */
const keys = publishedKeys(makeKeyRing(currentKey, [oldKey]))

const T = 1_795_348_800 // unix seconds
const DAY = 86_400
const licenseClaims = (issuedAtSeconds = T) =>
  Token.license({
    licenseKey: "ABCD-EFGH-JKLM-NPQR",
    licenseId: 7,
    productId: 3,
    status: "active",
    valid: true,
    code: "valid",
    expiresAt: null,
    graceDays: 0,
    maxActivations: 5,
    fingerprint: "fp-1",
    nonce: null,
    issuedAt: issuedAtSeconds * 1000
  })
const token = sign(currentKey, licenseClaims())

describe("verifyToken: keys", () => {
  it("accepts a token of the current key and returns its payload", async () => {
    const result = await verifyToken(token, keys, { now: T })
    expect(result).toEqual({ ok: true, payload: { ...licenseClaims(), kid: currentKey.kid } })
  })

  it("accepts the whole /public-key data object as the key set", async () => {
    expect((await verifyToken(token, { keys }, { now: T })).ok).toBe(true)
  })

  it("a token signed with the old key verifies while the old key is listed", async () => {
    const old = sign(oldKey, licenseClaims())
    expect((await verifyToken(old, keys, { now: T })).ok).toBe(true)
    expect(await verifyToken(old, publishedKeys(makeKeyRing(currentKey)), { now: T }))
      .toEqual({ ok: false, reason: "unknown_kid" })
  })

  it("a kid that no listed key has is unknown_kid", async () => {
    const stranger = sign(strangerKey, licenseClaims())
    expect(await verifyToken(stranger, keys, { now: T })).toEqual({ ok: false, reason: "unknown_kid" })
  })

  it("a token signed by another key under a listed kid is bad_signature", async () => {
    const [head] = sign(strangerKey, licenseClaims()).split(".")
    const forgedHead = base64UrlEncode(utf8Encode(Token.payloadJson(licenseClaims(), currentKey.kid)))
    const strangerSignature = Effect.runSync(signerOf(strangerKey).sign(forgedHead))
    const forged = `${forgedHead}.${base64UrlEncode(strangerSignature)}`
    expect(head).not.toBe(forgedHead)
    expect(await verifyToken(forged, keys, { now: T })).toEqual({ ok: false, reason: "bad_signature" })
  })

  it("a listed key that is not 32 bytes of standard base64 counts as absent", async () => {
    const broken = keys.map((k) => ({ ...k, public_key: k.public_key.replace(/=$/, "") }))
    expect(await verifyToken(token, broken, { now: T })).toEqual({ ok: false, reason: "unknown_kid" })
  })

  it("refuses malformed tokens", async () => {
    const [head, sig] = token.split(".")
    const notJson = `${base64UrlEncode(utf8Encode("{nope"))}.${sig}`
    const noKid = `${base64UrlEncode(utf8Encode(`{"v":1,"typ":"license","iat":${T},"exp":${T + 1}}`))}.${sig}`
    for (const bad of ["", ".", "abc", `${head}.`, `.${sig}`, `${head}.${sig}.x`, `${head}=.${sig}`, notJson, noKid]) {
      expect(await verifyToken(bad, keys, { now: T })).toEqual({ ok: false, reason: "malformed" })
    }
  })

  it("with a type asked for, another typ is wrong_type", async () => {
    expect(await verifyToken(token, keys, { now: T, type: "machine" }))
      .toMatchObject({ ok: false, reason: "wrong_type" })
    expect((await verifyToken(token, keys, { now: T, type: "license" })).ok).toBe(true)
  })
})

describe("verifyToken: tampering (property)", () => {
  const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ "

  it("changing any single character of a token makes it fail", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: token.length - 1 }),
        fc.constantFrom(...ALPHABET),
        async (index, replacement) => {
          fc.pre(token[index] !== replacement)
          const changed = token.slice(0, index) + replacement + token.slice(index + 1)
          expect((await verifyToken(changed, keys, { now: T })).ok).toBe(false)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("every other character at the end of either part fails (leftover base64 bits are not ignored)", async () => {
    const dot = token.indexOf(".")
    for (const index of [dot - 1, token.length - 1]) {
      for (const replacement of ALPHABET) {
        if (token[index] === replacement) continue
        const changed = token.slice(0, index) + replacement + token.slice(index + 1)
        expect((await verifyToken(changed, keys, { now: T })).ok).toBe(false)
      }
    }
  })

  it("flipping bits of any single byte of either part makes it fail", async () => {
    const [head, sig] = token.split(".") as [string, string]
    const parts = [base64UrlDecode(head)!, base64UrlDecode(sig)!]
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 1 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (part, at, mask) => {
          const bytes = Uint8Array.from(parts[part]!)
          bytes[at % bytes.length]! ^= mask
          const changed = part === 0
            ? `${base64UrlEncode(bytes)}.${sig}`
            : `${head}.${base64UrlEncode(bytes)}`
          expect((await verifyToken(changed, keys, { now: T })).ok).toBe(false)
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("verifyToken: time", () => {
  const exp = T + 7 * DAY

  it("expired once exp has passed", async () => {
    expect((await verifyToken(token, keys, { now: exp })).ok).toBe(true)
    expect(await verifyToken(token, keys, { now: exp + 1 })).toMatchObject({
      ok: false,
      reason: "expired",
      payload: { exp }
    })
  })

  it("iat in the future beyond the drift is not_yet_valid; within the drift is ok", async () => {
    expect((await verifyToken(token, keys, { now: T - 300 })).ok).toBe(true)
    expect(await verifyToken(token, keys, { now: T - 301 })).toMatchObject({ ok: false, reason: "not_yet_valid" })
    expect((await verifyToken(token, keys, { now: T - 3000, driftSeconds: 3600 })).ok).toBe(true)
    expect(await verifyToken(token, keys, { now: T - 1, driftSeconds: 0 }))
      .toMatchObject({ ok: false, reason: "not_yet_valid" })
  })

  it("the default clock is the system clock", async () => {
    const now = Math.floor(Date.now() / 1000)
    expect((await verifyToken(sign(currentKey, licenseClaims(now)), keys)).ok).toBe(true)
    expect(await verifyToken(sign(currentKey, licenseClaims(now - 8 * DAY)), keys))
      .toMatchObject({ ok: false, reason: "expired" })
  })

  it("clock roll-back: a local clock below the floor minus the drift is reported", async () => {
    const floor = new TimeFloor()
    expect((await verifyToken(token, keys, { now: T + 2 * DAY, floor })).ok).toBe(true)
    expect(floor.value).toBe(T + 2 * DAY)
    // the user winds the clock back to the day the token was issued
    expect(await verifyToken(token, keys, { now: T, floor })).toMatchObject({ ok: false, reason: "clock_rollback" })
    // a small step back, within the drift, is tolerated
    expect((await verifyToken(token, keys, { now: T + 2 * DAY - 300, floor })).ok).toBe(true)
    expect(floor.value).toBe(T + 2 * DAY)
  })

  it("within the drift, the floor is taken as now: a token already expired at the floor stays expired", async () => {
    const floor = new TimeFloor(exp + 200)
    expect(await verifyToken(token, keys, { now: exp - 50, floor })).toMatchObject({ ok: false, reason: "expired" })
  })

  it("the floor rises with the iat of each accepted token and persists as a number", async () => {
    const floor = new TimeFloor(T - 1000)
    await verifyToken(token, keys, { now: T - 100, floor })
    expect(floor.value).toBe(T)
    const saved = JSON.stringify({ floor })
    const restored = new TimeFloor(JSON.parse(saved).floor)
    expect(restored.value).toBe(T)
    expect(await verifyToken(token, keys, { now: T - 1000, floor: restored }))
      .toMatchObject({ ok: false, reason: "clock_rollback" })
  })
})

describe("readCrl", () => {
  const revokedKey = "WXYZ-2345-6789-ABCD"
  const suspendedKey = "SSSS-TTTT-UUUU-VVVV"
  const crlClaims = (seq = 4) =>
    Token.crl({
      seq,
      revokedKeys: [Token.licenseKeyHash(revokedKey)],
      suspendedKeys: [Token.licenseKeyHash(suspendedKey)],
      revokedFingerprints: [Token.fingerprintHash("Machine ünicode-01")],
      revokedMachines: [17],
      generatedAt: (T - 60) * 1000,
      issuedAt: T * 1000
    })
  const crlToken = sign(currentKey, crlClaims())

  it("verifies the list and answers key, fingerprint and machine checks", async () => {
    const result = await readCrl(crlToken, keys, { now: T })
    if (!result.ok) throw new Error(`refused: ${result.reason}`)
    const crl = result.crl
    expect(crl.seq).toBe(4)
    expect(await crl.isKeyRevoked(revokedKey)).toBe(true)
    expect(await crl.isKeyRevoked("  wxyz-2345-6789-abcd ")).toBe(true) // normalised like the server
    expect(await crl.isKeyRevoked(suspendedKey)).toBe(false)
    expect(await crl.isKeySuspended(suspendedKey)).toBe(true)
    expect(await crl.isKeySuspended(revokedKey)).toBe(false)
    expect(await crl.isFingerprintRevoked("Machine ünicode-01")).toBe(true)
    expect(await crl.isFingerprintRevoked("machine ünicode-01")).toBe(false) // fingerprints are exact
    expect(crl.isMachineRevoked(17)).toBe(true)
    expect(crl.isMachineRevoked(18)).toBe(false)
  })

  it("a list signed by a different key is refused", async () => {
    expect(await readCrl(sign(strangerKey, crlClaims()), keys, { now: T })).toEqual({ ok: false, reason: "unknown_kid" })
    const head = base64UrlEncode(utf8Encode(Token.payloadJson(crlClaims(), currentKey.kid)))
    const signature = Effect.runSync(signerOf(strangerKey).sign(head))
    expect(await readCrl(`${head}.${base64UrlEncode(signature)}`, keys, { now: T }))
      .toEqual({ ok: false, reason: "bad_signature" })
  })

  it("another token type is not a list", async () => {
    expect(await readCrl(token, keys, { now: T })).toEqual({ ok: false, reason: "wrong_type" })
  })

  it("an older list than one already seen is stale; an old list can be refused by age", async () => {
    expect(await readCrl(crlToken, keys, { now: T, minSeq: 5 })).toEqual({ ok: false, reason: "stale" })
    expect((await readCrl(crlToken, keys, { now: T, minSeq: 4 })).ok).toBe(true)
    expect(await readCrl(crlToken, keys, { now: T + DAY + 1, maxAgeSeconds: DAY }))
      .toEqual({ ok: false, reason: "expired" })
    expect((await readCrl(crlToken, keys, { now: T + DAY, maxAgeSeconds: DAY })).ok).toBe(true)
  })
})

describe("trustedKeySet: the keys a client pins", () => {
  it("derives each key's kid as the server does, from a bare public_key or a {kid, public_key} entry", async () => {
    expect(await keyIdOf(currentKey.publicKey)).toBe(currentKey.kid)
    const [bare, entry] = keys
    const pinned = await trustedKeySet([bare!.public_key, { kid: entry!.kid, public_key: entry!.public_key }])
    expect(pinned).toEqual([{ kid: bare!.kid, public_key: bare!.public_key }, { kid: entry!.kid, public_key: entry!.public_key }])
    expect((await verifyToken(token, pinned, { now: T })).ok).toBe(true)
  })

  it("refuses an empty list, a value that is not a 32-byte key, and a kid that is not its key's", async () => {
    await expect(trustedKeySet([])).rejects.toThrow(/no trusted key/)
    await expect(trustedKeySet([keys[0]!.public_key, "AAAA"])).rejects.toThrow(/#2 is not/)
    await expect(trustedKeySet([{ kid: oldKey.kid, public_key: keys[0]!.public_key }])).rejects.toThrow(/is not the id of its public_key/)
  })
})

describe("verify module stays portable", () => {
  it("imports nothing but @noble/ed25519 and its own files", () => {
    for (const file of ["index.ts", "token.ts", "encoding.ts", "payloads.ts", "keys.ts"]) {
      const source = readFileSync(new URL(`../src/verify/${file}`, import.meta.url), "utf8")
      const imports = [...source.matchAll(/(?:import|export)[^"']*from\s+["']([^"']+)["']/g)].map((m) => m[1]!)
      for (const path of imports) expect(path === "@noble/ed25519" || path.startsWith("./")).toBe(true)
      expect(source).not.toMatch(/\bBuffer\.|\bprocess\.|\brequire\(/)
    }
  })
})

describe("tokens from a newer server (CONTRACT §15: later versions only append keys)", () => {
  /** A license token whose JSON has `extra` appended after its last key, signed with the current key. */
  const withTrailing = (extra: string) => {
    const json = Token.payloadJson({ ...licenseClaims(), ent: ["export", "sync"] }, currentKey.kid).replace(/\}$/, `,${extra}}`)
    const head = Token.signingInput(json)
    const signature = Effect.runSync(signerOf(currentKey).sign(Token.signingBytes(head)))
    return Token.compact(head, signature)
  }

  it("a license token with unknown trailing keys verifies, its known keys (ent included) read as signed", async () => {
    const result = await verifyToken(withTrailing(`"seats_left":2,"features_v2":{"a":[1]}`), keys, { type: "license", now: T })
    expect(result.ok).toBe(true)
    if (result.ok && result.payload.typ === "license") {
      expect(result.payload.ent).toEqual(["export", "sync"])
      expect(result.payload.exp).toBe(T + 7 * DAY)
    }
  })

  it("a token of a server before entitlements (no ent) still verifies", async () => {
    const json = Token.payloadJson(licenseClaims(), currentKey.kid).replace(/,"ent":\[\]\}$/, "}")
    expect(json.endsWith(`"exp":${T + 7 * DAY}}`)).toBe(true)
    const head = Token.signingInput(json)
    const old = Token.compact(head, Effect.runSync(signerOf(currentKey).sign(Token.signingBytes(head))))
    const result = await verifyToken(old, keys, { type: "license", now: T })
    expect(result.ok && result.payload.typ === "license" && result.payload.ent).toBeUndefined()
  })
})
