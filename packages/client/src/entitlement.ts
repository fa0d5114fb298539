/**
 * Offline entitlement: may this device use the license now, without asking the server? Answers yes only for
 * a license token that verifies under a trusted key (the keys pinned into the app, never keys from storage or
 * from a server answer), of `typ` license, `valid: true`, for this license key (normalised as the server does),
 * this product and this device's fingerprint, whose `exp` (offline TTL) and license expiry plus grace have not
 * passed on the server's clock (the device's clock corrected by the offset the last verified online answer
 * measured), with no clock rollback below the persisted time floor, and whose key, fingerprint and machine are
 * not on a verified revocation list that is recent enough. Every other case says why, with one reason code each.
 */
import { type LicensePayload, normaliseLicenseKey, type PublishedKey, readCrl, TimeFloor, verifyToken } from "@lm/domain/verify"

/** What a licensed application keeps between runs (JSON in its {@link Storage}). Unsigned fields are hints only. */
export interface OfflineState {
  /** The last `signed_payload` of a valid validation; removed on a refusal. */
  readonly licenseToken?: string
  /** The last machine `certificate` (activate or heartbeat). */
  readonly certificate?: string
  /** The `crl` token of `/crl`, and when this client fetched it (unix seconds, server time). */
  readonly crl?: string
  readonly crlFetchedAt?: number
  /** The time floor (unix seconds, server time): the latest time seen; a time below it (less the drift) rolled back. */
  readonly timeFloor?: number
  /**
   * Seconds the server's clock is ahead of this device's (`server_time` less the device's time), measured by the
   * last verified online validation; the offline checks judge times on the device's clock plus this.
   */
  readonly serverOffset?: number
  /** With `trustOnFirstUse` only: the keys of the first `/public-key` answer, trusted from then on. */
  readonly firstUseKeys?: ReadonlyArray<PublishedKey>
}

/** The device's time corrected to the server's (unix seconds): `now` plus the stored offset (0 before any). */
export const serverTimeOf = (state: OfflineState, now: number): number =>
  now + (typeof state.serverOffset === "number" && Number.isFinite(state.serverOffset) ? Math.round(state.serverOffset) : 0)

/** Why a device is not entitled, in the order the checks run. */
export const notEntitledReasons = [
  /** The clock is behind the time floor by more than the drift: it was set back. */
  "clock_rollback",
  /** No license token is stored: never validated (or activated) online, or the last validation was refused. */
  "no_token",
  /** No trusted key yet: with `trustOnFirstUse`, before the first online answer. */
  "no_public_keys",
  /** The stored token is not a token. */
  "malformed_token",
  /** The token's `kid` is not among the trusted keys (another server's key, or a key the app does not pin). */
  "unknown_kid",
  /** The signature does not match: the token was altered. */
  "bad_signature",
  /** A signed token of another type (a refusal, a certificate) in place of a license token. */
  "wrong_type",
  /** The token's `exp` passed: validate online again. */
  "token_expired",
  /** The token was issued in the future of the server's time as this device estimates it. */
  "token_not_yet_valid",
  /** The token says the license was not valid. */
  "license_not_valid",
  /** The token is for another license key. */
  "key_mismatch",
  /** The token is for another product's license than the app's `productId` (or for a license of no product). */
  "product_mismatch",
  /** The token is for another device. */
  "fingerprint_mismatch",
  /** The license's expiry plus its grace days passed. */
  "license_expired",
  /** No revocation list is stored. */
  "crl_missing",
  /** The stored revocation list does not verify. */
  "crl_invalid",
  /** The revocation list is older than `maxCrlAgeSeconds`: fetch it online again. */
  "crl_too_old",
  /** The revocation list lists the license key as revoked or terminated. */
  "license_revoked",
  /** The revocation list lists the license key as suspended. */
  "license_suspended",
  /** The revocation list lists this device's fingerprint or machine as revoked. */
  "machine_revoked"
] as const
export type NotEntitledReason = (typeof notEntitledReasons)[number]

/** The answer of an entitlement check. */
export type Entitlement =
  | {
    readonly entitled: true
    /** The verified license token's payload. */
    readonly license: LicensePayload
    /** Until when (unix seconds) the token allows offline use, at the latest. */
    readonly offlineUntil: number
    /**
     * The license's effective entitlement codes, sorted, as the verified token states them (`ent`; none in a token
     * signed by a server without entitlements). They are as of the token's `iat`: validate online to refresh them.
     */
    readonly entitlements: ReadonlyArray<string>
  }
  | { readonly entitled: false; readonly reason: NotEntitledReason }

/** The codes a verified license token states: its `ent` when it is a list of strings, else none. */
const entitlementsOf = (license: LicensePayload): ReadonlyArray<string> =>
  Array.isArray(license.ent) ? license.ent.filter((code): code is string => typeof code === "string") : []

/** Settings of the check. */
export interface EntitlementOptions {
  /** The license key, as the user typed it (normalised here). */
  readonly licenseKey: string
  /** This device's fingerprint. */
  readonly fingerprint: string
  /** The app's product: a token of another `pid` is `product_mismatch`. Unset: any product's license entitles. */
  readonly productId?: number
  /** The trusted keys: only a token that verifies under one of them entitles. */
  readonly keys: ReadonlyArray<PublishedKey>
  /** The device's time, unix seconds (corrected to the server's with `state.serverOffset`). */
  readonly now: number
  /** Tolerated clock difference, seconds (default 300). */
  readonly driftSeconds?: number
  /** The oldest revocation list accepted, seconds since it was issued or fetched (default 7 days). */
  readonly maxCrlAgeSeconds?: number
}

/** Default `maxCrlAgeSeconds`: 7 days, the server's default offline TTL. */
export const DEFAULT_MAX_CRL_AGE_SECONDS = 7 * 86_400

const DAY = 86_400

const verifyFailure = {
  malformed: "malformed_token",
  unknown_kid: "unknown_kid",
  bad_signature: "bad_signature",
  wrong_type: "wrong_type",
  expired: "token_expired",
  not_yet_valid: "token_not_yet_valid",
  clock_rollback: "clock_rollback"
} as const satisfies Record<string, NotEntitledReason>

/**
 * Checks `state` offline. Returns the answer and the raised time floor, which the caller persists (it rises
 * to the server time of every check whose clock did not roll back, and to the `iat` of an accepted token).
 */
export const checkEntitlement = async (
  state: OfflineState,
  options: EntitlementOptions
): Promise<{ readonly entitlement: Entitlement; readonly timeFloor: number }> => {
  const floor = new TimeFloor(state.timeFloor ?? 0)
  const drift = options.driftSeconds ?? 300
  const serverNow = serverTimeOf(state, options.now)
  const no = (reason: NotEntitledReason) => ({ entitlement: { entitled: false, reason } as const, timeFloor: floor.value })
  if (serverNow < floor.value - drift) return no("clock_rollback")
  floor.observe(serverNow)
  if (state.licenseToken === undefined) return no("no_token")
  const keys = options.keys
  if (keys.length === 0) return no("no_public_keys")

  const verified = await verifyToken(state.licenseToken, keys, {
    type: "license",
    now: serverNow,
    driftSeconds: drift,
    floor
  })
  if (!verified.ok) return no(verifyFailure[verified.reason])
  const license = verified.payload
  if (license.valid !== true) return no("license_not_valid")
  if (license.key !== normaliseLicenseKey(options.licenseKey)) return no("key_mismatch")
  if (options.productId !== undefined && license.pid !== options.productId) return no("product_mismatch")
  if (license.fp !== options.fingerprint) return no("fingerprint_mismatch")
  const now = Math.max(serverNow, floor.value)
  if (license.expires !== null) {
    const expires = Date.parse(license.expires) / 1000
    if (!Number.isFinite(expires) || now > expires + license.grace_days * DAY) return no("license_expired")
  }

  if (state.crl === undefined) return no("crl_missing")
  const crl = await readCrl(state.crl, keys, { now: serverNow, driftSeconds: drift })
  if (!crl.ok) return no("crl_invalid")
  // The server re-signs the list only when it changes, so its `iat` can be old on a list fetched a minute ago:
  // its age counts from the later of its signing and its fetching.
  const fetchedAt = Math.max(crl.crl.payload.iat, state.crlFetchedAt ?? 0)
  if (now - fetchedAt > (options.maxCrlAgeSeconds ?? DEFAULT_MAX_CRL_AGE_SECONDS)) return no("crl_too_old")
  if (await crl.crl.isKeyRevoked(options.licenseKey)) return no("license_revoked")
  if (await crl.crl.isKeySuspended(options.licenseKey)) return no("license_suspended")
  if (await crl.crl.isFingerprintRevoked(options.fingerprint)) return no("machine_revoked")
  if (state.certificate !== undefined) {
    // The machine id comes from the signed certificate; an expired one still names its machine.
    const certificate = await verifyToken(state.certificate, keys, { type: "machine", now: serverNow, driftSeconds: drift })
    const machine = certificate.ok ? certificate.payload : certificate.reason === "expired" ? certificate.payload : undefined
    if (machine !== undefined && machine.typ === "machine" && crl.crl.isMachineRevoked(machine.mid)) return no("machine_revoked")
  }
  return {
    entitlement: { entitled: true, license, offlineUntil: license.exp, entitlements: entitlementsOf(license) },
    timeFloor: floor.value
  }
}
