/**
 * What the signed revocation list (public `GET /crl`) says, read in the browser: the token's payload (the
 * signature is the client libraries' business; the console only shows the list), and whether a license key is on
 * it, by the SHA-256 of the key as the list names keys.
 */

/** The payload of a `crl` token. */
export interface CrlPayload {
  readonly seq: number
  readonly revoked_keys: ReadonlyArray<string>
  readonly suspended_keys: ReadonlyArray<string>
  readonly revoked_fingerprints: ReadonlyArray<string>
  readonly revoked_machines: ReadonlyArray<number>
  readonly generated_at: string
}

/** The payload of a token (`base64url(json).base64url(signature)`). */
export const decodeCrl = (token: string): CrlPayload => {
  const part = token.split(".")[0] ?? ""
  const base64 = part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=")
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))
  return JSON.parse(new TextDecoder().decode(bytes)) as CrlPayload
}

/** SHA-256 hex of a text; undefined where the browser offers no Web Crypto (a page not served over HTTPS). */
export const sha256Hex = async (text: string): Promise<string | undefined> => {
  if (globalThis.crypto?.subtle === undefined) return undefined
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")
}

/** How the list names a key: `revoked`, `suspended`, `not listed`, or undefined when it cannot be told. */
export const keyListing = async (crl: CrlPayload, licenseKey: string): Promise<"revoked" | "suspended" | "not listed" | undefined> => {
  const hash = await sha256Hex(licenseKey)
  if (hash === undefined) return undefined
  if (crl.revoked_keys.includes(hash)) return "revoked"
  if (crl.suspended_keys.includes(hash)) return "suspended"
  return "not listed"
}
