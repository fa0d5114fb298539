/**
 * Offline verification of the Licensing Service's signed tokens, for client software.
 *
 * Depends on `@noble/ed25519` and the platform's WebCrypto only (no effect, no node: modules), so
 * it runs in Node, Deno, Bun and browsers. The public keys are those `GET /public-key` lists (its
 * `keys`), pinned into the client when it is built (`trustedKeySet`). See README.md beside this file.
 *
 * @since 0.1.0
 */
import { verifyAsync } from "@noble/ed25519"
import { sha256Hex } from "./encoding.js"
import { publicKeyBytes } from "./keys.js"
import { normaliseLicenseKey } from "./licenseKey.js"
import type { CrlPayload, PayloadOf, PublishedKey, TokenPayload, TokenType } from "./payloads.js"
import { checkTimes, decodeToken, systemSeconds, type TimeOptions, type VerifyFailure } from "./token.js"

export type {
  CrlPayload,
  DownloadPayload,
  LicensePayload,
  MachinePayload,
  PayloadOf,
  PublishedKey,
  TokenPayload,
  TokenType
} from "./payloads.js"
export { DEFAULT_DRIFT_SECONDS, TimeFloor, type TimeOptions, type VerifyFailure } from "./token.js"
export { keyIdOf, publicKeyBytes, type TrustedKey, trustedKeySet, trustedKeysProblem } from "./keys.js"

/** The accepted keys: the `keys` array of `/public-key`, or the whole `/public-key` data object. */
export type KeySet = ReadonlyArray<PublishedKey> | { readonly keys: ReadonlyArray<PublishedKey> }

/** Options of {@link verifyToken}. */
export interface VerifyOptions<T extends TokenType = TokenType> extends TimeOptions {
  /** Accept only tokens of this `typ` (else `wrong_type`). */
  readonly type?: T
}

/**
 * The outcome of a verification. When the signature checked out but a later check failed
 * (`wrong_type`, `expired`, `not_yet_valid`, `clock_rollback`) the failure carries the payload;
 * an unverified payload is never returned.
 */
export type VerifyResult<P extends TokenPayload = TokenPayload> =
  | { readonly ok: true; readonly payload: P }
  | { readonly ok: false; readonly reason: "malformed" | "unknown_kid" | "bad_signature" }
  | { readonly ok: false; readonly reason: "wrong_type"; readonly payload: TokenPayload }
  | { readonly ok: false; readonly reason: "expired" | "not_yet_valid" | "clock_rollback"; readonly payload: P }

const isKeyList = (keys: KeySet): keys is ReadonlyArray<PublishedKey> => Array.isArray(keys)

const findKey = (keys: KeySet, kid: string): Uint8Array | undefined => {
  const list: ReadonlyArray<PublishedKey> = isKeyList(keys) ? keys : keys.keys
  for (const entry of list) {
    if (entry.kid !== kid) continue
    const raw = publicKeyBytes(entry.public_key)
    if (raw !== undefined) return raw
  }
  return undefined
}

/**
 * Verifies a compact token against the accepted public keys: picks the key by the payload's
 * `kid` (a listed key that is not 32 bytes of base64 counts as absent), checks the Ed25519
 * signature (strict RFC 8032, as node:crypto does), then the `typ` when asked for, then the
 * times (see {@link TimeOptions}: `exp` passed, `iat` beyond the drift, clock roll-back).
 */
export async function verifyToken<T extends TokenType = TokenType>(
  token: string,
  keys: KeySet,
  options: VerifyOptions<T> = {}
): Promise<VerifyResult<PayloadOf<T>>> {
  const decoded = decodeToken(token)
  if (decoded === undefined) return { ok: false, reason: "malformed" }
  const payload = decoded.payload as PayloadOf<T>
  const publicKey = findKey(keys, payload.kid)
  if (publicKey === undefined) return { ok: false, reason: "unknown_kid" }
  let valid: boolean
  try {
    valid = await verifyAsync(decoded.signature, decoded.message, publicKey, { zip215: false })
  } catch {
    valid = false
  }
  if (!valid) return { ok: false, reason: "bad_signature" }
  if (options.type !== undefined && payload.typ !== options.type) return { ok: false, reason: "wrong_type", payload }
  const late = checkTimes(payload, options.now ?? systemSeconds(), options)
  return late === undefined ? { ok: true, payload } : { ok: false, reason: late, payload }
}

/** Options of {@link readCrl}. */
export interface CrlOptions extends TimeOptions {
  /** Refuse a list whose `seq` is below this (a replayed older list), with `stale`. */
  readonly minSeq?: number
  /** Refuse a list issued more than this many seconds ago, with `expired`. */
  readonly maxAgeSeconds?: number
}

/** The outcome of {@link readCrl}. */
export type CrlResult =
  | { readonly ok: true; readonly crl: RevocationList }
  | { readonly ok: false; readonly reason: VerifyFailure | "stale" }

export { normaliseLicenseKey } from "./licenseKey.js"

/**
 * A verified certificate revocation list. License keys are looked up by the SHA-256 hex of the
 * normalised key, fingerprints by the SHA-256 hex of the fingerprint exactly as activated.
 */
export class RevocationList {
  readonly #revokedKeys: ReadonlySet<string>
  readonly #suspendedKeys: ReadonlySet<string>
  readonly #revokedFingerprints: ReadonlySet<string>
  readonly #revokedMachines: ReadonlySet<number>

  readonly payload: CrlPayload

  constructor(payload: CrlPayload) {
    this.payload = payload
    this.#revokedKeys = new Set(payload.revoked_keys)
    this.#suspendedKeys = new Set(payload.suspended_keys)
    this.#revokedFingerprints = new Set(payload.revoked_fingerprints)
    this.#revokedMachines = new Set(payload.revoked_machines)
  }

  /** Grows on every change; persist it and pass it back as `minSeq`. */
  get seq(): number {
    return this.payload.seq
  }

  /** Whether the license key is revoked or terminated. */
  async isKeyRevoked(licenseKey: string): Promise<boolean> {
    return this.#revokedKeys.has(await sha256Hex(normaliseLicenseKey(licenseKey)))
  }

  /** Whether the license key is suspended. */
  async isKeySuspended(licenseKey: string): Promise<boolean> {
    return this.#suspendedKeys.has(await sha256Hex(normaliseLicenseKey(licenseKey)))
  }

  /** Whether a machine with this fingerprint was revoked. */
  async isFingerprintRevoked(fingerprint: string): Promise<boolean> {
    return this.#revokedFingerprints.has(await sha256Hex(fingerprint))
  }

  /** Whether the machine with this id was revoked. */
  isMachineRevoked(machineId: number): boolean {
    return this.#revokedMachines.has(machineId)
  }
}

const isStringArray = (u: unknown): u is ReadonlyArray<string> =>
  Array.isArray(u) && u.every((x) => typeof x === "string")

/**
 * Verifies a `typ: "crl"` token (the `crl` field of `GET /crl`) like {@link verifyToken} and
 * returns a {@link RevocationList} to check keys, fingerprints and machines against.
 */
export const readCrl = async (token: string, keys: KeySet, options: CrlOptions = {}): Promise<CrlResult> => {
  const result = await verifyToken(token, keys, { ...options, type: "crl" })
  if (!result.ok) return { ok: false, reason: result.reason }
  const p = result.payload
  if (
    typeof p.seq !== "number" || !isStringArray(p.revoked_keys) || !isStringArray(p.suspended_keys) ||
    !isStringArray(p.revoked_fingerprints) || !Array.isArray(p.revoked_machines)
  ) {
    return { ok: false, reason: "malformed" }
  }
  if (options.minSeq !== undefined && p.seq < options.minSeq) return { ok: false, reason: "stale" }
  if (options.maxAgeSeconds !== undefined) {
    const now = Math.max(options.now ?? systemSeconds(), options.floor?.value ?? -Infinity)
    if (now > p.iat + options.maxAgeSeconds) return { ok: false, reason: "expired" }
  }
  return { ok: true, crl: new RevocationList(p) }
}
