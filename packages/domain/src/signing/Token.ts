/**
 * The compact signed-token format of CONTRACT.md §5 and the payloads of its four token types.
 *
 * A token is `base64url(json) + "." + base64url(signature)` (no padding); the Ed25519 signature
 * covers the ASCII bytes of the first part. The JSON is canonical: no whitespace, the keys in the
 * contract's order. The constructors here build the unsigned claims (everything but `kid`, which
 * the `Signer` fills in with the key it signs with); {@link payloadJson} writes the canonical JSON
 * directly, key by key, because it runs on the validate hot path.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { normaliseLicenseKey } from "../verify/licenseKey.js"
import { isoTime } from "../shared/time.js"

export { isoTime }
import type {
  CrlPayload,
  DownloadPayload,
  LicensePayload,
  MachinePayload,
  RefusalPayload,
  TokenPayload
} from "../verify/payloads.js"

export type {
  CrlPayload,
  DownloadPayload,
  LicensePayload,
  MachinePayload,
  PayloadOf,
  PublishedKey,
  RefusalPayload,
  TokenPayload,
  TokenType
} from "../verify/payloads.js"

const DAY = 86_400

/** Default offline TTL of validate's `signed_payload`: 7 days. */
export const LICENSE_TTL_SECONDS = 7 * DAY

/** Default lifetime of a node-locked machine certificate: 30 days. */
export const MACHINE_TTL_SECONDS = 30 * DAY

/** Default lifetime of a download token (`LM_DOWNLOAD_TOKEN_TTL`): 300 seconds. */
export const DOWNLOAD_TTL_SECONDS = 300

/** A payload without its `kid`: what the signer turns into a token. */
export type Claims<P extends TokenPayload = TokenPayload> = P extends TokenPayload ? Omit<P, "kid"> : never

/** Epoch milliseconds as whole unix seconds (`iat`, `exp`), rounded down. */
export const unixSeconds = (millis: number): number => Math.floor(millis / 1000)

/** Input of {@link license}. Points in time are epoch milliseconds (as in the model); durations seconds. */
export interface LicenseClaimsInput {
  readonly licenseKey: string
  readonly licenseId: number
  readonly productId: number | null
  readonly status: string
  readonly valid: boolean
  readonly code: string
  /** The license's expiry, or null when perpetual. */
  readonly expiresAt: number | null
  readonly graceDays: number
  readonly maxActivations: number | null
  /** The fingerprint sent to validate, or null. */
  readonly fingerprint: string | null
  readonly nonce: string | number | null
  /** Issue time (now). */
  readonly issuedAt: number
  /** Offline TTL; default {@link LICENSE_TTL_SECONDS}. */
  readonly ttlSeconds?: number
  /** The license's effective entitlement codes, sorted (`ent`; none when not given). */
  readonly entitlements?: ReadonlyArray<string>
}

/** Claims of validate's `signed_payload`; `exp = iat + ttlSeconds`, then `ent`. */
export const license = (input: LicenseClaimsInput): Claims<LicensePayload> => {
  const iat = unixSeconds(input.issuedAt)
  return {
    v: 1,
    typ: "license",
    key: input.licenseKey,
    lid: input.licenseId,
    pid: input.productId,
    status: input.status,
    valid: input.valid,
    code: input.code,
    expires: input.expiresAt === null ? null : isoTime(input.expiresAt),
    grace_days: input.graceDays,
    max: input.maxActivations,
    fp: input.fingerprint,
    nonce: input.nonce,
    iat,
    exp: iat + (input.ttlSeconds ?? LICENSE_TTL_SECONDS),
    ent: input.entitlements ?? []
  }
}

/** The facts of a refused validation that its `signed_refusal` states. */
export interface RefusalClaimsInput {
  readonly licenseKey: string
  readonly licenseId: number
  readonly status: string
  readonly code: string
  /** The fingerprint sent to validate, or null. */
  readonly fingerprint: string | null
  readonly nonce: string | number | null
  /** Epoch milliseconds. */
  readonly issuedAt: number
}

/** The claims of validate's `signed_refusal` (CONTRACT §5), keys in the wire order. */
export const refusal = (input: RefusalClaimsInput): Claims<RefusalPayload> => ({
  v: 1,
  typ: "refusal",
  key: input.licenseKey,
  lid: input.licenseId,
  status: input.status,
  code: input.code,
  fp: input.fingerprint,
  nonce: input.nonce,
  iat: unixSeconds(input.issuedAt)
})

/** Input of {@link machineCertificateExp}; all times unix seconds. */
export interface MachineExpInput {
  readonly iat: number
  /** The lease end of a floating machine; null for a node-locked one. */
  readonly leaseExpiresAt: number | null
  /** The license's expiry, or null when perpetual. */
  readonly licenseExpiresAt: number | null
  readonly graceDays: number
  /** Lifetime of a node-locked certificate; default {@link MACHINE_TTL_SECONDS}. */
  readonly ttlSeconds?: number
}

/**
 * `exp` of a machine certificate: the lease end for a floating machine, else `iat` + 30 days,
 * and never past the license's expiry plus its grace days.
 */
export const machineCertificateExp = (input: MachineExpInput): number => {
  const natural = input.leaseExpiresAt ?? input.iat + (input.ttlSeconds ?? MACHINE_TTL_SECONDS)
  return input.licenseExpiresAt === null
    ? natural
    : Math.min(natural, input.licenseExpiresAt + input.graceDays * DAY)
}

/** Input of {@link machine}. */
export interface MachineClaimsInput {
  readonly licenseKey: string
  readonly licenseId: number
  readonly productId: number | null
  readonly machineId: number
  readonly fingerprint: string
  /** The license's expiry, or null when perpetual. */
  readonly expiresAt: number | null
  readonly maxActivations: number | null
  /** The license's grace days (bounds `exp`; not in the payload). */
  readonly graceDays: number
  /** Issue time (now). */
  readonly issuedAt: number
  /** The lease end of a floating machine; null for a node-locked one. */
  readonly leaseExpiresAt: number | null
  /** Lifetime of a node-locked certificate; default {@link MACHINE_TTL_SECONDS}. */
  readonly ttlSeconds?: number
}

/** Claims of a machine `certificate`; `exp` per {@link machineCertificateExp}. */
export const machine = (input: MachineClaimsInput): Claims<MachinePayload> => {
  const iat = unixSeconds(input.issuedAt)
  return {
    v: 1,
    typ: "machine",
    key: input.licenseKey,
    lid: input.licenseId,
    pid: input.productId,
    mid: input.machineId,
    fp: input.fingerprint,
    expires: input.expiresAt === null ? null : isoTime(input.expiresAt),
    max: input.maxActivations,
    iat,
    exp: machineCertificateExp({
      iat,
      leaseExpiresAt: input.leaseExpiresAt === null ? null : unixSeconds(input.leaseExpiresAt),
      licenseExpiresAt: input.expiresAt === null ? null : unixSeconds(input.expiresAt),
      graceDays: input.graceDays,
      ...(input.ttlSeconds === undefined ? {} : { ttlSeconds: input.ttlSeconds })
    })
  }
}

/** Input of {@link crl}. Hash entries with {@link licenseKeyHash} and {@link fingerprintHash}. */
export interface CrlClaimsInput {
  readonly seq: number
  readonly revokedKeys: ReadonlyArray<string>
  readonly suspendedKeys: ReadonlyArray<string>
  readonly revokedFingerprints: ReadonlyArray<string>
  readonly revokedMachines: ReadonlyArray<number>
  /** When the list's content was generated (last change). */
  readonly generatedAt: number
  /** Issue time (now). */
  readonly issuedAt: number
}

/** Claims of the certificate revocation list. */
export const crl = (input: CrlClaimsInput): Claims<CrlPayload> => ({
  v: 1,
  typ: "crl",
  seq: input.seq,
  revoked_keys: input.revokedKeys,
  suspended_keys: input.suspendedKeys,
  revoked_fingerprints: input.revokedFingerprints,
  revoked_machines: input.revokedMachines,
  generated_at: isoTime(input.generatedAt),
  iat: unixSeconds(input.issuedAt)
})

/** Input of {@link download}. */
export interface DownloadClaimsInput {
  readonly releaseId: number
  readonly licenseId: number
  /** Issue time (now). */
  readonly issuedAt: number
  /** Default {@link DOWNLOAD_TTL_SECONDS}. */
  readonly ttlSeconds?: number
}

/** Claims of a release download token; `exp = iat + ttlSeconds`. */
export const download = (input: DownloadClaimsInput): Claims<DownloadPayload> => {
  const iat = unixSeconds(input.issuedAt)
  return {
    v: 1,
    typ: "download",
    rid: input.releaseId,
    lid: input.licenseId,
    iat,
    exp: iat + (input.ttlSeconds ?? DOWNLOAD_TTL_SECONDS)
  }
}

const s = JSON.stringify

/**
 * The JSON of each list of entitlement codes signed (`ent`), by the list's identity: a license's effective codes
 * are the same array from one validate to the next (`effectiveEntitlements`), so they are written once, not per
 * token. Lists are never changed in place.
 */
const entJson = new WeakMap<ReadonlyArray<string>, string>()

const codesJson = (codes: ReadonlyArray<string>): string => {
  if (codes.length === 0) return "[]"
  let json = entJson.get(codes)
  if (json === undefined) {
    json = s(codes)
    entJson.set(codes, json)
  }
  return json
}

/**
 * The canonical JSON of a payload: `claims` with `kid` in third place, keys in the contract's
 * order, no whitespace. Written field by field (each value through `JSON.stringify`), never by
 * sorting; a field not listed for the type is not written.
 */
export const payloadJson = (claims: Claims, kid: string): string => {
  const head = `{"v":1,"typ":"${claims.typ}","kid":${s(kid)}`
  switch (claims.typ) {
    case "license":
      return `${head},"key":${s(claims.key)},"lid":${s(claims.lid)},"pid":${s(claims.pid)},"status":${
        s(claims.status)
      },"valid":${s(claims.valid)},"code":${s(claims.code)},"expires":${s(claims.expires)},"grace_days":${
        s(claims.grace_days)
      },"max":${s(claims.max)},"fp":${s(claims.fp)},"nonce":${s(claims.nonce)},"iat":${s(claims.iat)},"exp":${
        s(claims.exp)
      },"ent":${codesJson(claims.ent ?? [])}}`
    case "refusal":
      return `${head},"key":${s(claims.key)},"lid":${s(claims.lid)},"status":${s(claims.status)},"code":${
        s(claims.code)
      },"fp":${s(claims.fp)},"nonce":${s(claims.nonce)},"iat":${s(claims.iat)}}`
    case "machine":
      return `${head},"key":${s(claims.key)},"lid":${s(claims.lid)},"pid":${s(claims.pid)},"mid":${
        s(claims.mid)
      },"fp":${s(claims.fp)},"expires":${s(claims.expires)},"max":${s(claims.max)},"iat":${
        s(claims.iat)
      },"exp":${s(claims.exp)}}`
    case "crl":
      return `${head},"seq":${s(claims.seq)},"revoked_keys":${s(claims.revoked_keys)},"suspended_keys":${
        s(claims.suspended_keys)
      },"revoked_fingerprints":${s(claims.revoked_fingerprints)},"revoked_machines":${
        s(claims.revoked_machines)
      },"generated_at":${s(claims.generated_at)},"iat":${s(claims.iat)}}`
    case "download":
      return `${head},"rid":${s(claims.rid)},"lid":${s(claims.lid)},"iat":${s(claims.iat)},"exp":${s(claims.exp)}}`
  }
}

/**
 * The first part of a token: base64url (no padding) of the UTF-8 JSON. Its ASCII bytes are signed.
 * Node's own encoder (this module runs on the server only); the portable one in `verify/encoding.ts`
 * gives the same text.
 */
export const signingInput = (json: string): string => Buffer.from(json, "utf8").toString("base64url")

/** The bytes signed for a first part: its ASCII characters. */
export const signingBytes = (signingInput: string): Uint8Array => Buffer.from(signingInput, "latin1")

/** Joins the first part and the 64-byte signature into a compact token. */
export const compact = (signingInput: string, signature: Uint8Array): string =>
  `${signingInput}.${Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString("base64url")}`

/** SHA-256 hex of a normalised (trimmed, upper-cased) license key, as listed in the CRL. */
export const licenseKeyHash = (licenseKey: string): string =>
  createHash("sha256").update(normaliseLicenseKey(licenseKey), "utf8").digest("hex")

/** SHA-256 hex of a machine fingerprint (UTF-8, as activated), as listed in the CRL. */
export const fingerprintHash = (fingerprint: string): string =>
  createHash("sha256").update(fingerprint, "utf8").digest("hex")
