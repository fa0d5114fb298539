/**
 * Ed25519 signing keys and the key ring the `Signer` is built from.
 *
 * A key is a 32-byte seed (RFC 8032 private key). Its key id (`kid`) is the first 16 lower-case
 * hex characters of the SHA-256 of the raw 32-byte public key: stable, derived from public data
 * only, so a client can recompute it. The seed is always held in a `Redacted`, so it never shows
 * in `String`, `JSON.stringify` or `util.inspect` output.
 *
 * @since 0.1.0
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes } from "node:crypto"
import { Effect, Redacted, Schema } from "effect"
import { base64Decode, base64Encode } from "../verify/encoding.js"
import type { PublishedKey } from "../verify/payloads.js"
import { KID_LENGTH } from "./model.js"

/** `LM_SIGNING_KEY` (or a stored seed) is not the base64 of a 32-byte Ed25519 seed. */
export class InvalidSigningKey extends Schema.TaggedError<InvalidSigningKey>()("InvalidSigningKey", {
  message: Schema.String
}) {}

/** A public key that verifies tokens, with its key id. */
export interface PublicKeyInfo {
  readonly kid: string
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array
}

/** A key that signs: its public half and the redacted 32-byte seed. */
export interface SigningKey extends PublicKeyInfo {
  readonly seed: Redacted.Redacted<Uint8Array>
}

/** The keys a `Signer` works with: the current signing key and every key still accepted (current first). */
export interface KeyRing {
  readonly current: SigningKey
  readonly accepted: ReadonlyArray<PublicKeyInfo>
}

/** DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows. */
export const PKCS8_ED25519_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20
])

/** DER prefix of an SPKI Ed25519 public key; the raw 32-byte key follows. */
export const SPKI_ED25519_PREFIX = Uint8Array.from([
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00
])

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}

/** The key id of a raw public key: first 16 hex characters of its SHA-256. */
export const kidOf = (publicKey: Uint8Array): string =>
  createHash("sha256").update(publicKey).digest("hex").slice(0, KID_LENGTH)

/** A public key with its key id. */
export const publicKeyInfo = (publicKey: Uint8Array): PublicKeyInfo => {
  if (publicKey.length !== 32) throw new RangeError(`an Ed25519 public key has 32 bytes, got ${publicKey.length}`)
  return { kid: kidOf(publicKey), publicKey: Uint8Array.from(publicKey) }
}

/** Standard base64 with padding of a raw public key (`public_key` of `/public-key`). */
export const publicKeyBase64 = (publicKey: Uint8Array): string => base64Encode(publicKey)

/** SPKI DER of a raw public key. */
export const publicKeySpki = (publicKey: Uint8Array): Uint8Array => concat(SPKI_ED25519_PREFIX, publicKey)

/** SPKI PEM of a raw public key (`pem` of `/public-key`). */
export const publicKeyPem = (publicKey: Uint8Array): string => {
  const body = base64Encode(publicKeySpki(publicKey)).replace(/.{1,64}/g, "$&\n")
  return `-----BEGIN PUBLIC KEY-----\n${body}-----END PUBLIC KEY-----\n`
}

/** A fresh random 32-byte seed from the platform's cryptographic source. */
export const generateSeed = (): Uint8Array => Uint8Array.from(randomBytes(32))

/** PKCS#8 DER of a seed: what node:crypto imports as a private KeyObject. */
export const seedPkcs8 = (seed: Uint8Array): Uint8Array => concat(PKCS8_ED25519_PREFIX, seed)

/**
 * The signing key of a 32-byte seed (public key derived with node:crypto).
 * Throws {@link InvalidSigningKey} when the seed is not 32 bytes.
 */
export const signingKeyFromSeed = (seed: Uint8Array): SigningKey => {
  if (seed.length !== 32) {
    throw new InvalidSigningKey({ message: `an Ed25519 seed has 32 bytes, got ${seed.length}` })
  }
  const privateKey = createPrivateKey({ key: Buffer.from(seedPkcs8(seed)), format: "der", type: "pkcs8" })
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" })
  const info = publicKeyInfo(spki.subarray(SPKI_ED25519_PREFIX.length))
  return { ...info, seed: Redacted.make(Uint8Array.from(seed), { label: "signing key seed" }) }
}

/** A new signing key from a fresh random seed. */
export const generateSigningKey = (): SigningKey => signingKeyFromSeed(generateSeed())

/**
 * Parses `LM_SIGNING_KEY`: standard base64 (padding optional, surrounding whitespace ignored) of
 * a 32-byte seed. The error says what is wrong without repeating the value.
 */
export const parseSigningKey = (text: string | Redacted.Redacted<string>): Effect.Effect<SigningKey, InvalidSigningKey> =>
  Effect.suspend(() => {
    const raw = (typeof text === "string" ? text : Redacted.value(text)).trim()
    const seed = base64Decode(raw, "optional")
    if (seed === undefined) {
      return Effect.fail(new InvalidSigningKey({ message: "LM_SIGNING_KEY is not valid base64" }))
    }
    if (seed.length !== 32) {
      return Effect.fail(
        new InvalidSigningKey({
          message: `LM_SIGNING_KEY must be the base64 of a 32-byte Ed25519 seed, got ${seed.length} bytes`
        })
      )
    }
    return Effect.succeed(signingKeyFromSeed(seed))
  })

/** The seed of a key in standard base64, for storing a generated key (redacted). */
export const seedBase64 = (key: SigningKey): Redacted.Redacted<string> =>
  Redacted.make(base64Encode(Redacted.value(key.seed)), { label: "signing key seed" })

/**
 * A key ring: `current` signs; `previous` keys (public halves only) still verify tokens issued
 * before a rotation. `accepted` lists the current key first, then each previous key once.
 */
export const makeKeyRing = (current: SigningKey, previous: ReadonlyArray<PublicKeyInfo> = []): KeyRing => {
  const accepted: Array<PublicKeyInfo> = [{ kid: current.kid, publicKey: current.publicKey }]
  for (const key of previous) {
    if (!accepted.some((k) => k.kid === key.kid)) accepted.push({ kid: key.kid, publicKey: key.publicKey })
  }
  return { current, accepted }
}

/** The `keys` list of `/public-key`: every accepted key, the current one flagged. */
export const publishedKeys = (ring: KeyRing): ReadonlyArray<PublishedKey> =>
  ring.accepted.map((k) => ({
    kid: k.kid,
    public_key: publicKeyBase64(k.publicKey),
    current: k.kid === ring.current.kid
  }))

/** Decodes a `public_key` (standard base64 of 32 bytes), e.g. one read back from the store. */
export const publicKeyFromBase64 = (text: string): PublicKeyInfo | undefined => {
  const raw = base64Decode(text)
  return raw !== undefined && raw.length === 32 ? publicKeyInfo(raw) : undefined
}

/** A signing key as a store keeps it (structurally the model's `StoredSigningKey`). */
export interface StoredKeyFields {
  readonly kid: string
  /** Standard base64 of the 32-byte seed. */
  readonly seed: string
  /** Standard base64 of the raw 32-byte public key. */
  readonly publicKey: string
  readonly current: boolean
}

/**
 * The key ring of the stored keys: the one marked `current` signs, all are accepted. Fails when
 * no key is current or a stored `kid`/public key does not match its seed.
 */
export const keyRingFromStored = (rows: ReadonlyArray<StoredKeyFields>): Effect.Effect<KeyRing, InvalidSigningKey> =>
  Effect.gen(function*() {
    const currentRow = rows.find((row) => row.current)
    if (currentRow === undefined) return yield* new InvalidSigningKey({ message: "no current signing key is stored" })
    const current = yield* parseSigningKey(currentRow.seed).pipe(
      Effect.mapError(() => new InvalidSigningKey({ message: `stored signing key ${currentRow.kid} has an invalid seed` }))
    )
    if (current.kid !== currentRow.kid || publicKeyBase64(current.publicKey) !== currentRow.publicKey) {
      return yield* new InvalidSigningKey({ message: `stored signing key ${currentRow.kid} does not match its seed` })
    }
    const previous: Array<PublicKeyInfo> = []
    for (const row of rows) {
      if (row.current) continue
      const info = publicKeyFromBase64(row.publicKey)
      if (info === undefined || info.kid !== row.kid) {
        return yield* new InvalidSigningKey({ message: `stored public key ${row.kid} is invalid` })
      }
      previous.push(info)
    }
    return makeKeyRing(current, previous)
  })
