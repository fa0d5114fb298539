/**
 * Offline trust over real HTTP (CONTRACT §4 `/crl`, `/public-key`, §5): the signed payload, machine
 * certificates and the CRL verify with the client verify module and with node:crypto alone against
 * `/public-key`; their payloads carry the contract's fields in the contract's order; the CRL follows every
 * revocation change in the very next request and is not rebuilt otherwise; rotation keeps old tokens valid;
 * and the private key appears in no response. On the memory store and on PGlite.
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes, verify as nodeVerify } from "node:crypto"
import { Effect, Redacted } from "effect"
import { Ports, SigningKeys } from "@lm/domain"
import { verifyToken } from "@lm/domain/verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin } from "./support/Admin.js"
import { startApp, type TestApp } from "./support/App.js"

const licenseKeys = ["v", "typ", "kid", "key", "lid", "pid", "status", "valid", "code", "expires", "grace_days", "max", "fp", "nonce", "iat", "exp", "ent"]
const machineKeys = ["v", "typ", "kid", "key", "lid", "pid", "mid", "fp", "expires", "max", "iat", "exp"]
const crlKeys = ["v", "typ", "kid", "seq", "revoked_keys", "suspended_keys", "revoked_fingerprints", "revoked_machines", "generated_at", "iat"]

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** The JSON of a token's first part, exactly as signed. */
const payloadText = (token: string): string => Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")

/** A token's payload, checked to be canonical: no whitespace (re-serialising gives the same text). */
const payloadOf = (token: string): Record<string, any> => {
  const text = payloadText(token)
  const payload = JSON.parse(text)
  expect(JSON.stringify(payload)).toBe(text)
  return payload
}

/** Verifies a token with node:crypto only, given `/public-key`'s data: the key is picked by `kid` from `keys`. */
const verifiesWithNodeCrypto = (token: string, publicKeyData: { keys: ReadonlyArray<{ kid: string; public_key: string }> }) => {
  const [head, signature] = token.split(".") as [string, string]
  const entry = publicKeyData.keys.find((k) => k.kid === payloadOf(token).kid)
  if (entry === undefined) return false
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), Buffer.from(entry.public_key, "base64")])
  const key = createPublicKey({ key: spki, format: "der", type: "spki" })
  return nodeVerify(null, Buffer.from(head, "ascii"), key, Buffer.from(signature, "base64url"))
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

for (const store of ["memory", "pglite"] as const) {
  describe(`signed tokens and the CRL on ${store}`, () => {
    const seed = randomBytes(32)
    /** Every response body and header line received in this file, scanned for private keys at the end. */
    const received: Array<string> = []
    let app: TestApp
    let manage: ReturnType<typeof admin>

    const record = <R extends { readonly headers: Headers; readonly body: unknown }>(res: R): R => {
      received.push(typeof res.body === "string" ? res.body : JSON.stringify(res.body ?? ""))
      res.headers.forEach((value, name) => received.push(`${name}: ${value}`))
      return res
    }
    const post = async (path: string, body: unknown) => record(await app.call("POST", path, { body, auth: null }))
    const get = async (path: string, headers: Record<string, string> = {}) =>
      record(await app.call("GET", path, { auth: null, headers }))
    const publicKey = async () => (await get("/public-key")).body.data
    const crl = async () => {
      const res = await get("/crl")
      expect(res.status).toBe(200)
      return { etag: res.headers.get("etag"), data: res.body.data, payload: payloadOf(res.body.data.crl) }
    }

    beforeAll(async () => {
      const started = await startApp(store, { signingKey: Redacted.make(seed.toString("base64")) })
      app = { ...started, call: async (...args) => record(await started.call(...args)) }
      manage = admin(app)
    })
    afterAll(() => app?.close())

    it("signs with LM_SIGNING_KEY and publishes its public half", async () => {
      const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed])
      const derived = createPublicKey(createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }))
        .export({ format: "der", type: "spki" })
      const data = await publicKey()
      expect(data.public_key).toBe(derived.subarray(12).toString("base64"))
      expect(data.kid).toBe(createHash("sha256").update(derived.subarray(12)).digest("hex").slice(0, 16))
      expect(createPublicKey(data.pem).export({ format: "der", type: "spki" })).toEqual(derived)
      expect(data.keys).toEqual([{ kid: data.kid, public_key: data.public_key, current: true }])
    })

    it("signs validate's payload: it verifies both ways and carries the contract's fields in order", async () => {
      const expires = new Date(Date.now() + 10 * 86_400_000).toISOString()
      const { key, id } = await manage.createLicense({ product_id: 7, max_activations: 3, expires_at: expires, grace_days: 2 })
      expect((await post("/activate", { license_key: key, fingerprint: "fp-1" })).status).toBe(201)
      const keys = await publicKey()

      const res = await post("/validate", { license_key: key, fingerprint: "fp-1", nonce: "n-1" })
      expect(res.body.data.nonce).toBe("n-1")
      const token: string = res.body.data.signed_payload
      const verified = await verifyToken(token, keys.keys, { type: "license" })
      expect(verified.ok).toBe(true)
      expect(verifiesWithNodeCrypto(token, keys)).toBe(true)

      const payload = payloadOf(token)
      expect(Object.keys(payload)).toEqual(licenseKeys)
      expect(payload).toMatchObject({
        v: 1,
        typ: "license",
        kid: keys.kid,
        key,
        lid: id,
        pid: 7,
        status: "active",
        valid: true,
        code: "valid",
        expires,
        grace_days: 2,
        max: 3,
        fp: "fp-1",
        nonce: "n-1"
      })
      expect(Math.abs(payload.iat - nowSeconds())).toBeLessThanOrEqual(5)
      expect(payload.exp).toBe(payload.iat + 7 * 86_400)

      // An integer nonce is signed as an integer; nothing sent is null.
      const numeric = payloadOf((await post("/validate", { license_key: key, nonce: 99 })).body.data.signed_payload)
      expect(numeric).toMatchObject({ nonce: 99, fp: null })
      const bare = await post("/validate", { license_key: key })
      expect(bare.body.data).not.toHaveProperty("nonce")
      expect(payloadOf(bare.body.data.signed_payload).nonce).toBeNull()
    })

    it("answers a refusal with a signed refusal and no license token; a refusal never passes as a license token", async () => {
      const { key, id } = await manage.createLicense()
      await manage.suspend(key)
      const keys = await publicKey()
      const data = (await post("/validate", { license_key: key, fingerprint: "fp-9", nonce: "n-1" })).body.data
      expect(data.valid).toBe(false)
      expect(data.signed_payload).toBeNull()
      const token: string = data.signed_refusal
      const payload = payloadOf(token)
      expect(Object.keys(payload)).toEqual(["v", "typ", "kid", "key", "lid", "status", "code", "fp", "nonce", "iat"])
      expect(payload).toMatchObject({
        v: 1, typ: "refusal", kid: keys.kid, key, lid: id, status: "suspended", code: "license_suspended", fp: "fp-9", nonce: "n-1"
      })
      expect((await verifyToken(token, keys, { type: "refusal" })).ok).toBe(true)
      expect(verifiesWithNodeCrypto(token, keys)).toBe(true)
      // A client that asks for a license token is told it is not one.
      expect(await verifyToken(token, keys, { type: "license" })).toMatchObject({ ok: false, reason: "wrong_type" })

      const forged = Buffer.from(payloadText(token).replace('"code":"license_suspended"', '"code":"valid"')).toString("base64url")
      const tampered = `${forged}.${token.split(".")[1]}`
      expect(await verifyToken(tampered, keys)).toEqual({ ok: false, reason: "bad_signature" })
      expect(verifiesWithNodeCrypto(tampered, keys)).toBe(false)
    })

    it("signs machine certificates at activation and heartbeat", async () => {
      const keys = await publicKey()
      const locked = await manage.createLicense({ max_activations: 2 })
      const activated = (await post("/activate", { license_key: locked.key, fingerprint: "cert-1" })).body.data
      const certificate: string = activated.certificate
      expect(await verifyToken(certificate, keys, { type: "machine" })).toMatchObject({ ok: true })
      expect(verifiesWithNodeCrypto(certificate, keys)).toBe(true)
      const payload = payloadOf(certificate)
      expect(Object.keys(payload)).toEqual(machineKeys)
      expect(payload).toMatchObject({
        v: 1,
        typ: "machine",
        kid: keys.kid,
        key: locked.key,
        lid: locked.id,
        pid: null,
        mid: activated.id,
        fp: "cert-1",
        expires: null,
        max: 2
      })
      expect(payload.exp).toBe(payload.iat + 30 * 86_400)

      const floating = await manage.createLicense({ is_floating: true, lease_duration: 900 })
      expect((await post("/activate", { license_key: floating.key, fingerprint: "cert-2" })).status).toBe(201)
      const beat = (await post("/heartbeat", { license_key: floating.key, fingerprint: "cert-2" })).body.data
      expect(await verifyToken(beat.certificate, keys, { type: "machine" })).toMatchObject({ ok: true })
      expect(verifiesWithNodeCrypto(beat.certificate, keys)).toBe(true)
      expect(payloadOf(beat.certificate).exp).toBe(Math.floor(Date.parse(beat.lease_expires_at) / 1000))

      const ending = new Date(Date.now() + 3 * 86_400_000)
      const short = await manage.createLicense({ expires_at: ending.toISOString(), grace_days: 1 })
      const shortCert = (await post("/activate", { license_key: short.key, fingerprint: "cert-3" })).body.data.certificate
      expect(payloadOf(shortCert).exp).toBe(Math.floor(ending.getTime() / 1000) + 86_400)
    })

    it("serves a signed CRL in the contract's shape", async () => {
      const keys = await publicKey()
      const { data, payload } = await crl()
      expect(await verifyToken(data.crl, keys, { type: "crl" })).toMatchObject({ ok: true })
      expect(verifiesWithNodeCrypto(data.crl, keys)).toBe(true)
      expect(Object.keys(payload)).toEqual(crlKeys)
      expect(payload).toMatchObject({ v: 1, typ: "crl", kid: keys.kid })
      expect(data.kid).toBe(keys.kid)
      expect(payload.generated_at).toBe(data.generated_at)
    })

    it("changes the CRL in the very next request after each revocation change", async () => {
      const { key } = await manage.createLicense({ max_activations: 2 })
      const machine = (await post("/activate", { license_key: key, fingerprint: "crl-fp" })).body.data
      const keyHash = sha256(key)
      let last = await crl()
      const next = async () => {
        const now = await crl()
        expect(now.payload.seq).toBeGreaterThan(last.payload.seq)
        expect(now.etag).not.toBe(last.etag)
        last = now
        return now.payload
      }

      await manage.suspend(key)
      let list = await next()
      expect(list.suspended_keys).toContain(keyHash)
      expect(list.revoked_keys).not.toContain(keyHash)

      await manage.reinstate(key)
      list = await next()
      expect(list.suspended_keys).not.toContain(keyHash)

      await manage.revoke(key)
      list = await next()
      expect(list.revoked_keys).toContain(keyHash)

      await manage.reinstate(key)
      list = await next()
      expect(list.revoked_keys).not.toContain(keyHash)

      await manage.revokeMachine(machine.id)
      list = await next()
      expect(list.revoked_fingerprints).toContain(sha256("crl-fp"))
      expect(list.revoked_machines).toContain(machine.id)

      await manage.terminate(key)
      list = await next()
      expect(list.revoked_keys).toContain(keyHash)
      expect(list.suspended_keys).not.toContain(keyHash)
    })

    it("does not rebuild the CRL when nothing changed, and answers 304 to a matching If-None-Match", async () => {
      const first = await get("/crl")
      const etag = first.headers.get("etag")!
      // Client calls that change no revocation leave the list as it is.
      const { key } = await manage.createLicense()
      await post("/activate", { license_key: key, fingerprint: "quiet" })
      await post("/validate", { license_key: key })
      const second = await get("/crl")
      expect(second.headers.get("etag")).toBe(etag)
      expect(second.body.data.crl).toBe(first.body.data.crl)
      expect(second.body.data.generated_at).toBe(first.body.data.generated_at)

      const notModified = await get("/crl", { "if-none-match": etag })
      expect(notModified.status).toBe(304)
      expect(notModified.body).toBeUndefined()
      expect(notModified.headers.get("etag")).toBe(etag)
      expect(notModified.headers.get("cache-control")).toBe("public, no-cache")
      expect((await get("/crl", { "if-none-match": `"stale", W/${etag}` })).status).toBe(304)
      expect((await get("/crl", { "if-none-match": "*" })).status).toBe(304)

      await manage.suspend(key)
      const changed = await get("/crl", { "if-none-match": etag })
      expect(changed.status).toBe(200)
      expect(changed.headers.get("etag")).not.toBe(etag)
    })

    it("keeps old tokens verifiable after a key rotation and signs new ones with the new key", async () => {
      const before = await publicKey()
      const { key } = await manage.createLicense()
      const oldPayload: string = (await post("/validate", { license_key: key })).body.data.signed_payload
      const oldCertificate: string = (await post("/activate", { license_key: key, fingerprint: "rot" })).body.data.certificate
      const oldCrl = await crl()

      const newKid = await app.run(Effect.flatMap(SigningKeys, (keys) => keys.rotate))
      expect(newKid).not.toBe(before.kid)

      const after = await publicKey()
      expect(after.kid).toBe(newKid)
      expect(after.keys).toContainEqual({ kid: newKid, public_key: after.public_key, current: true })
      expect(after.keys).toContainEqual({ kid: before.kid, public_key: before.public_key, current: false })
      expect(after.keys[0].kid).toBe(newKid)
      expect((await get("/public-keyk")).body.data).toEqual(after)

      for (const token of [oldPayload, oldCertificate, oldCrl.data.crl]) {
        expect(payloadOf(token).kid).toBe(before.kid)
        expect((await verifyToken(token, after.keys)).ok).toBe(true)
        expect(verifiesWithNodeCrypto(token, after)).toBe(true)
      }

      const newPayload: string = (await post("/validate", { license_key: key })).body.data.signed_payload
      const newCertificate: string = (await post("/heartbeat", { license_key: key, fingerprint: "rot" })).body.data.certificate
      const newCrl = await crl()
      expect(newCrl.data.kid).toBe(newKid)
      expect(newCrl.etag).not.toBe(oldCrl.etag)
      for (const token of [newPayload, newCertificate, newCrl.data.crl]) {
        expect(payloadOf(token).kid).toBe(newKid)
        expect((await verifyToken(token, after.keys)).ok).toBe(true)
        expect(verifiesWithNodeCrypto(token, after)).toBe(true)
        // A client that only knows the old key cannot accept it.
        expect(await verifyToken(token, before.keys)).toEqual({ ok: false, reason: "unknown_kid" })
      }
    })

    it("never sends a private key, in any body or header", async () => {
      const stored = await app.run(Effect.flatMap(Ports.SigningKeyRepository, (repo) => repo.list))
      const seeds = [seed, ...stored.map((row) => Buffer.from(row.seed, "base64"))]
      expect(seeds.length).toBeGreaterThanOrEqual(3)
      expect(received.length).toBeGreaterThan(50)
      const all = received.join("\n")
      for (const secret of seeds) {
        const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), secret])
        for (const form of [
          secret.toString("base64"),
          secret.toString("base64url"),
          secret.toString("hex"),
          pkcs8.toString("base64")
        ]) {
          expect(all.includes(form), `a private key was sent (${form.slice(0, 6)}…)`).toBe(false)
        }
      }
    })
  })
}
