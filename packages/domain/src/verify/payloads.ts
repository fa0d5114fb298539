/**
 * The payloads of the five signed token types (CONTRACT.md §5), with the field names and the
 * key order they have on the wire. Times named `iat`/`exp` are unix seconds; `expires` and
 * `generated_at` are ISO 8601 strings.
 *
 * @since 0.1.0
 */

/** The `typ` of each token type. */
export const tokenTypes = ["license", "refusal", "machine", "crl", "download"] as const
export type TokenType = (typeof tokenTypes)[number]

/** The token types that carry no `exp`: a CRL (its age is judged by the client) and a refusal (it entitles nothing). */
export const tokenTypesWithoutExp: ReadonlyArray<TokenType> = ["crl", "refusal"]

/** Payload of validate's `signed_payload` (`typ: "license"`). */
export interface LicensePayload {
  readonly v: 1
  readonly typ: "license"
  readonly kid: string
  /** The license key (normalised: trimmed, upper-cased). */
  readonly key: string
  readonly lid: number
  readonly pid: number | null
  readonly status: string
  readonly valid: boolean
  readonly code: string
  readonly expires: string | null
  readonly grace_days: number
  readonly max: number | null
  readonly fp: string | null
  readonly nonce: string | number | null
  readonly iat: number
  readonly exp: number
  /**
   * The license's effective entitlement codes, sorted (CONTRACT §15). Absent from tokens signed before
   * entitlements existed: read it as none.
   */
  readonly ent?: ReadonlyArray<string>
}

/**
 * Payload of validate's `signed_refusal` (`typ: "refusal"`): proof that the server refused, with why. It never
 * entitles: it has no `exp`, no expiry and no seat limit, and a verifier asked for a license token rejects it.
 */
export interface RefusalPayload {
  readonly v: 1
  readonly typ: "refusal"
  readonly kid: string
  readonly key: string
  readonly lid: number
  readonly status: string
  readonly code: string
  readonly fp: string | null
  readonly nonce: string | number | null
  readonly iat: number
}

/** Payload of a machine `certificate` (`typ: "machine"`). */
export interface MachinePayload {
  readonly v: 1
  readonly typ: "machine"
  readonly kid: string
  readonly key: string
  readonly lid: number
  readonly pid: number | null
  readonly mid: number
  readonly fp: string
  readonly expires: string | null
  readonly max: number | null
  readonly iat: number
  readonly exp: number
}

/** Payload of the certificate revocation list (`typ: "crl"`). It has no `exp`. */
export interface CrlPayload {
  readonly v: 1
  readonly typ: "crl"
  readonly kid: string
  readonly seq: number
  /** SHA-256 hex of each revoked or terminated license key. */
  readonly revoked_keys: ReadonlyArray<string>
  /** SHA-256 hex of each suspended license key. */
  readonly suspended_keys: ReadonlyArray<string>
  /** SHA-256 hex of the fingerprint of each revoked machine. */
  readonly revoked_fingerprints: ReadonlyArray<string>
  /** Ids of revoked machines. */
  readonly revoked_machines: ReadonlyArray<number>
  readonly generated_at: string
  readonly iat: number
}

/** Payload of a release download token (`typ: "download"`). */
export interface DownloadPayload {
  readonly v: 1
  readonly typ: "download"
  readonly kid: string
  readonly rid: number
  readonly lid: number
  readonly iat: number
  readonly exp: number
}

/** Any token payload. */
export type TokenPayload = LicensePayload | RefusalPayload | MachinePayload | CrlPayload | DownloadPayload

/** The payload type of a token type. */
export type PayloadOf<T extends TokenType> = Extract<TokenPayload, { readonly typ: T }>

/** One entry of the `keys` list of `/public-key`: a key still accepted for verification. */
export interface PublishedKey {
  readonly kid: string
  /** The raw 32-byte Ed25519 public key in standard base64 with padding. */
  readonly public_key: string
  readonly current?: boolean
}
