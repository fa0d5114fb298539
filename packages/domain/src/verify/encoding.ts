/**
 * Byte encodings shared by the signer and the client-side verifier: base64url without padding,
 * standard base64 with padding, UTF-8 and hex, plus a WebCrypto SHA-256.
 *
 * Portable on purpose (no Buffer, no node: modules) so that it runs in a browser. Decoders are
 * strict: a character outside the alphabet, a wrong length or non-zero trailing bits is refused,
 * so each byte string has exactly one accepted text form (a changed character never decodes to
 * the same bytes).
 *
 * @since 0.1.0
 */

const URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
const STD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/** Two-character lookup for 12-bit groups: halves the work of the encoder loop. */
const pairs = (alphabet: string): ReadonlyArray<string> => {
  const out: Array<string> = new Array(4096)
  for (let i = 0; i < 4096; i++) out[i] = alphabet[i >> 6]! + alphabet[i & 63]!
  return out
}
const URL_PAIRS = pairs(URL_ALPHABET)
const STD_PAIRS = pairs(STD_ALPHABET)

const reverse = (alphabet: string): Int8Array => {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < 64; i++) table[alphabet.charCodeAt(i)] = i
  return table
}
const URL_REVERSE = reverse(URL_ALPHABET)
const STD_REVERSE = reverse(STD_ALPHABET)

const encode = (bytes: Uint8Array, alphabet: string, table: ReadonlyArray<string>, pad: boolean): string => {
  const n = bytes.length
  const whole = n - (n % 3)
  let out = ""
  for (let i = 0; i < whole; i += 3) {
    const t = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += table[t >> 12]! + table[t & 4095]!
  }
  const rest = n - whole
  if (rest === 1) {
    const t = bytes[whole]!
    out += alphabet[t >> 2]! + alphabet[(t & 3) << 4]! + (pad ? "==" : "")
  } else if (rest === 2) {
    const t = (bytes[whole]! << 8) | bytes[whole + 1]!
    out += alphabet[t >> 10]! + alphabet[(t >> 4) & 63]! + alphabet[(t & 15) << 2]! + (pad ? "=" : "")
  }
  return out
}

const decode = (text: string, table: Int8Array): Uint8Array | undefined => {
  const n = text.length
  if (n % 4 === 1) return undefined
  const out = new Uint8Array(Math.floor((n * 3) / 4))
  let bits = 0
  let count = 0
  let o = 0
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    const v = c < 128 ? table[c]! : -1
    if (v < 0) return undefined
    bits = (bits << 6) | v
    count += 6
    if (count >= 8) {
      count -= 8
      out[o++] = (bits >> count) & 255
    }
  }
  // Leftover bits (2 or 4) must be zero, else two texts would decode to the same bytes.
  if ((bits & ((1 << count) - 1)) !== 0) return undefined
  return out
}

/** base64url without padding (RFC 4648 §5), as used by both parts of a token. */
export const base64UrlEncode = (bytes: Uint8Array): string => encode(bytes, URL_ALPHABET, URL_PAIRS, false)

/** Strict base64url decoding (no padding accepted); `undefined` for anything that is not canonical. */
export const base64UrlDecode = (text: string): Uint8Array | undefined => decode(text, URL_REVERSE)

/** Standard base64 with `=` padding (RFC 4648 §4), as used for `public_key` in `/public-key`. */
export const base64Encode = (bytes: Uint8Array): string => encode(bytes, STD_ALPHABET, STD_PAIRS, true)

/**
 * Strict standard base64 decoding. Padding is required when `padding` is `"required"` (the
 * default), and may be left out when it is `"optional"`.
 */
export const base64Decode = (
  text: string,
  padding: "required" | "optional" = "required"
): Uint8Array | undefined => {
  let body = text
  if (text.endsWith("==")) body = text.slice(0, -2)
  else if (text.endsWith("=")) body = text.slice(0, -1)
  const padded = body !== text
  if (padded) {
    if (text.length % 4 !== 0) return undefined
  } else if (padding === "required" && text.length % 4 !== 0) {
    return undefined
  }
  return decode(body, STD_REVERSE)
}

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** The UTF-8 bytes of a string. */
export const utf8Encode = (text: string): Uint8Array => encoder.encode(text)

/** Strict UTF-8 decoding; `undefined` for invalid byte sequences. */
export const utf8Decode = (bytes: Uint8Array): string | undefined => {
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Lower-case hex of bytes. */
export const toHex = (bytes: Uint8Array): string => {
  let out = ""
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]!]!
  return out
}

/** SHA-256 of the UTF-8 bytes of `text`, as lower-case hex, through WebCrypto (`crypto.subtle`). */
export const sha256Hex = async (text: string): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8Encode(text) as Uint8Array<ArrayBuffer>)))
