/**
 * The keys a client trusts: the `public_key` values of `GET /public-key` (or entries of its `keys` list), pinned
 * into the client at build time. A client verifies with these and nothing else, so no server answer can add or
 * replace a key it trusts. Portable: WebCrypto only.
 *
 * @since 0.1.0
 */
import { base64Decode, toHex } from "./encoding.js"
import type { PublishedKey } from "./payloads.js"

/** A trusted key: a `public_key` (standard base64 of the raw 32-byte Ed25519 key), or `{ kid?, public_key }`. */
export type TrustedKey = string | { readonly kid?: string; readonly public_key: string }

/** The raw 32 bytes of a `public_key` in standard base64 with padding; `undefined` for anything else. */
export const publicKeyBytes = (text: unknown): Uint8Array | undefined => {
  if (typeof text !== "string") return undefined
  const raw = base64Decode(text)
  return raw !== undefined && raw.length === 32 ? raw : undefined
}

/** The key id of a raw public key: the first 16 lower-case hex characters of its SHA-256 (as the server derives it). */
export const keyIdOf = async (publicKey: Uint8Array): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", publicKey as Uint8Array<ArrayBuffer>))).slice(0, 16)

const publicKeyOf = (key: TrustedKey): unknown => typeof key === "string" ? key : (key as { public_key?: unknown } | null)?.public_key

/** What is wrong with a list of trusted keys (empty, or an entry that is not a key), or `undefined`. */
export const trustedKeysProblem = (keys: unknown): string | undefined => {
  if (!Array.isArray(keys) || keys.length === 0) return "no trusted key given"
  const bad = keys.findIndex((key) => publicKeyBytes(publicKeyOf(key)) === undefined)
  return bad === -1 ? undefined : `trusted key #${bad + 1} is not the standard base64 of a 32-byte Ed25519 public key`
}

/**
 * The trusted keys as a key set for `verifyToken` and `readCrl`, each with its key id derived from the key.
 * Rejects with an `Error` saying which entry is wrong: not a key (see {@link trustedKeysProblem}), or a `kid`
 * given beside a key that is not that key's id.
 */
export const trustedKeySet = async (keys: ReadonlyArray<TrustedKey>): Promise<ReadonlyArray<PublishedKey>> => {
  const problem = trustedKeysProblem(keys)
  if (problem !== undefined) throw new Error(problem)
  return Promise.all(keys.map(async (key, i) => {
    const public_key = publicKeyOf(key) as string
    const kid = await keyIdOf(publicKeyBytes(public_key)!)
    if (typeof key !== "string" && key.kid !== undefined && key.kid !== kid) {
      throw new Error(`trusted key #${i + 1}: its kid ${key.kid} is not the id of its public_key (${kid})`)
    }
    return { kid, public_key }
  }))
}
