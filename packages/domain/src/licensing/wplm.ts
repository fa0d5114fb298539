/**
 * The rules of the WPLM compatibility namespace (CONTRACT §17): what differs at `{rest_root}/wplm/v1/` for
 * applications shipped with the WPLM client libraries, which cache any `signed_payload` they receive, judge it
 * offline by its `valid` and `expires` alone (not `exp`), hash the raw key against the CRL's `revoked_keys`
 * (not `suspended_keys`) and read integer statuses. Each rule is here once; the HTTP adapter only translates.
 */
import type { Claims, CrlPayload, LicensePayload } from "../signing/Token.js"
import { isoTime } from "../shared/time.js"
import { normalizeKey } from "./keys.js"
import type { LicenseSource, LicenseStatus, MachineStatus } from "./model.js"

/** License statuses as WPLM numbers them. */
export const licenseStatusCodes: Readonly<Record<LicenseStatus, number>> = {
  pending: 0,
  active: 1,
  inactive: 2,
  expired: 3,
  suspended: 4,
  revoked: 5,
  terminated: 6
}

/** Machine statuses as WPLM numbers them. */
export const machineStatusCodes: Readonly<Record<MachineStatus, number>> = { active: 1, inactive: 2, revoked: 3 }

/** License sources as WPLM numbers them (a pool key was minted by a generator). */
export const licenseSourceCodes: Readonly<Record<LicenseSource, number>> = { import: 0, generator: 1, pool: 1, api: 2 }

/**
 * Whether a key arrives exactly as it is stored (trimmed, upper-case): those libraries hash the raw key for the
 * CRL, so any other spelling would miss it there and is refused.
 */
export const isSentNormalised = (raw: string): boolean => normalizeKey(raw) === raw

const DAY_MS = 86_400_000

/**
 * A license token for those libraries, from the lm/v1 claims: valid, its `expires` is the earlier of the
 * license's expiry plus grace and the token's `exp` (so they enforce both offline); a refusal is license-typed
 * too, with `valid: false` and `expires` and `exp` one second before it was issued, so that it replaces any
 * token they cached and they deny offline from then on.
 */
export const licenseClaims = (claims: Claims<LicensePayload>): Claims<LicensePayload> => {
  if (!claims.valid) {
    const past = claims.iat - 1
    return { ...claims, expires: isoTime(past * 1000), exp: past }
  }
  const tokenEnd = claims.exp * 1000
  const licenseEnd = claims.expires === null ? tokenEnd : Date.parse(claims.expires) + claims.grace_days * DAY_MS
  return { ...claims, expires: isoTime(Math.min(tokenEnd, licenseEnd)) }
}

/** The CRL for those libraries: `revoked_keys` holds the suspended keys too (they read no other list). */
export const crlClaims = (claims: Claims<CrlPayload>): Claims<CrlPayload> => ({
  ...claims,
  revoked_keys: [...claims.revoked_keys, ...claims.suspended_keys]
})
