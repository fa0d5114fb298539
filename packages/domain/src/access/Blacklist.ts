/** Which license keys, fingerprints and client addresses are refused outright (`blacklisted`). */
import { Context } from "effect"
import { normaliseLicenseKey } from "../verify/licenseKey.js"

/** What a client call is checked against. */
export interface BlacklistSubject {
  readonly licenseKey: string
  readonly fingerprint: string | null
  readonly ipAddress: string | null
}

/** The blacklist; by default nothing is blacklisted. The bundled server fills it from `LM_BLACKLIST`. */
export const Blacklist = Context.Reference<{ readonly isBlacklisted: (subject: BlacklistSubject) => boolean }>(
  "@lm/domain/Blacklist",
  { defaultValue: () => ({ isBlacklisted: () => false }) }
)

/**
 * A blacklist from entries `key:<license key>`, `fp:<fingerprint>` and `ip:<address>`; a bare entry is a key.
 * Keys are normalised as the server normalises every key it reads (`normaliseLicenseKey`, which `Keys.normalizeKey` is).
 */
export const blacklistFromEntries = (entries: ReadonlyArray<string>) => {
  const keys = new Set<string>()
  const fingerprints = new Set<string>()
  const ips = new Set<string>()
  for (const raw of entries) {
    const entry = raw.trim()
    if (entry === "") continue
    if (entry.startsWith("fp:")) fingerprints.add(entry.slice(3))
    else if (entry.startsWith("ip:")) ips.add(entry.slice(3))
    else keys.add(normaliseLicenseKey(entry.startsWith("key:") ? entry.slice(4) : entry))
  }
  return {
    isBlacklisted: (subject: BlacklistSubject) =>
      keys.has(subject.licenseKey) ||
      (subject.fingerprint !== null && fingerprints.has(subject.fingerprint)) ||
      (subject.ipAddress !== null && ips.has(subject.ipAddress))
  }
}
