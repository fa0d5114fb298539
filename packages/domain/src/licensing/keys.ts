/**
 * License keys: the four-group format, normalisation, and minting from a generator's charset with a
 * cryptographic random source.
 */
import { Effect, Result } from "effect"
import { invalidParam, type InvalidParam } from "../shared/errors.js"
import { Random } from "../shared/random.js"
import { hasNonAscii, normaliseLicenseKey } from "../verify/licenseKey.js"
import { DEFAULT_CHARSET } from "./model.js"

/** One group of a key: A-Z and 0-9, at most 24 characters (prefix 8 + chunk 16). */
const KEY_GROUP = "[A-Z0-9]{1,24}"

/** Four dash-separated groups of A-Z and 0-9, each at most 24 characters (prefix 8 + chunk 16). */
const KEY_PATTERN = new RegExp(`^${KEY_GROUP}-${KEY_GROUP}-${KEY_GROUP}-${KEY_GROUP}$`)

/**
 * Keys in the key format within a text (global: for `replace`), not part of a longer dash-separated run; what
 * logs redact (a key is a secret: it activates seats).
 */
export const keysInText = new RegExp(`(?<![A-Za-z0-9-])${KEY_GROUP}(?:-${KEY_GROUP}){3}(?![A-Za-z0-9-])`, "gi")

/**
 * Imported keys of other shapes within a text (global): 3 to 8 groups of {@link STORED_KEY_PATTERN}'s alphabet,
 * upper-case as stored, holding a digit, not a date; what logs redact beside {@link keysInText}. The case and the
 * digit keep ordinary hyphenated words ("cross-process-lock") out of it.
 */
export const storedKeysInText = /(?<![A-Za-z0-9-])(?!\d{4}-\d\d-\d\d)(?=[A-Z-]*[0-9])[A-Z0-9]{1,32}(?:-[A-Z0-9]{1,32}){2,7}(?![A-Za-z0-9-])/g

/**
 * Trims ASCII whitespace and upper-cases ASCII letters, as every input path does: the verify module's
 * {@link normaliseLicenseKey} (client software checks CRLs with it), so server and clients cannot disagree.
 */
export const normalizeKey: (input: string) => string = normaliseLicenseKey

/** Whether an already normalised key is in the key format of keys made here (four groups). */
export const isKeyFormat = (key: string): boolean => KEY_PATTERN.test(key)

/**
 * The shape a stored key may have (CONTRACT §4, §17): 2–8 dash-separated groups of 1–32 of A-Z0-9, at most 128
 * characters; imported keys keep theirs (WPLM's five groups, ...). Every route that reads a key accepts it.
 */
const STORED_KEY_PATTERN = /^[A-Z0-9]{1,32}(?:-[A-Z0-9]{1,32}){1,7}$/

/** The longest stored key. */
export const MAX_KEY_LENGTH = 128

/** Whether an already normalised key has the shape a stored (possibly imported) key may have. */
export const isStoredKeyFormat = (key: string): boolean => key.length <= MAX_KEY_LENGTH && STORED_KEY_PATTERN.test(key)

/** Why a key with a character outside ASCII is refused (CONTRACT §3: no Unicode case folding or trimming). */
const NON_ASCII_KEY = "must contain only ASCII characters (A-Z, 0-9 and dashes)"

/**
 * Normalises a key that names a stored license and checks its shape ({@link isStoredKeyFormat}: imported keys
 * included); a malformed key, or one with any non-ASCII character, is a `rest_invalid_param` on `license_key`.
 */
export const parseKey = (input: string): Result.Result<string, InvalidParam> => {
  const key = normalizeKey(input)
  return isStoredKeyFormat(key)
    ? Result.succeed(key)
    : Result.fail(invalidParam(
      "license_key",
      hasNonAscii(key) ? NON_ASCII_KEY : "must be 2 to 8 dash-separated groups of 1 to 32 of A-Z and 0-9, at most 128 characters"
    ))
}

/**
 * Normalises the key of a license being created (POST `/licenses`) and checks the four-group format of §3; a
 * malformed key is a `rest_invalid_param` on `license_key`.
 */
export const parseNewKey = (input: string): Result.Result<string, InvalidParam> => {
  const key = normalizeKey(input)
  return isKeyFormat(key)
    ? Result.succeed(key)
    : Result.fail(invalidParam("license_key", hasNonAscii(key) ? NON_ASCII_KEY : "must be four dash-separated groups of A-Z and 0-9"))
}

/** Normalises the start of a key (a list's `search`); one with a non-ASCII character is a `rest_invalid_param` on `field`. */
export const parseKeyPrefix = (input: string, field: string): Result.Result<string, InvalidParam> => {
  const prefix = normalizeKey(input)
  return hasNonAscii(prefix) ? Result.fail(invalidParam(field, NON_ASCII_KEY)) : Result.succeed(prefix)
}

/** How keys are minted: the alphabet, the length of each group and a prefix glued to the first group. */
export interface KeyFormat {
  readonly charset: string
  readonly chunkLength: number
  readonly prefix: string
}

/** The format of keys minted without a generator: 4 × 4 characters of a 32-letter alphabet (80 bits). */
export const defaultKeyFormat: KeyFormat = { charset: DEFAULT_CHARSET, chunkLength: 4, prefix: "" }

/** The least randomness a minted key may carry. */
export const MIN_KEY_BITS = 64

/** Bits of randomness in a key of this format (the prefix adds none). */
export const keyBits = (format: Pick<KeyFormat, "charset" | "chunkLength">): number =>
  4 * format.chunkLength * Math.log2(new Set(format.charset).size)

/**
 * Checks a generator's key format: a charset of upper-case letters and digits with at least 16 distinct
 * characters, groups of 2–16, a prefix of 0–8 of A-Z0-9, and at least 64 bits of randomness.
 */
export const checkKeyFormat = (format: KeyFormat): Result.Result<KeyFormat, InvalidParam> => {
  if (!/^[A-Z0-9]+$/.test(format.charset)) return Result.fail(invalidParam("charset", "must contain only A-Z and 0-9"))
  const distinct = [...new Set(format.charset)].join("")
  if (distinct.length < 16) return Result.fail(invalidParam("charset", "must have at least 16 distinct characters"))
  if (!Number.isInteger(format.chunkLength) || format.chunkLength < 2 || format.chunkLength > 16) {
    return Result.fail(invalidParam("chunk_length", "must be an integer from 2 to 16"))
  }
  if (!/^[A-Z0-9]{0,8}$/.test(format.prefix)) return Result.fail(invalidParam("prefix", "must be 0 to 8 of A-Z and 0-9"))
  const bits = keyBits({ charset: distinct, chunkLength: format.chunkLength })
  if (bits < MIN_KEY_BITS) {
    return Result.fail(
      invalidParam("chunk_length", `charset and chunk_length give ${bits.toFixed(1)} bits of randomness; at least ${MIN_KEY_BITS} are required`)
    )
  }
  return Result.succeed({ ...format, charset: distinct })
}

/**
 * Draws `count` uniformly distributed indexes below `size` from random bytes, rejecting bytes that would bias
 * the draw.
 */
const drawIndexes = Effect.fnUntraced(function*(count: number, size: number) {
  const random = yield* Random
  const limit = 256 - (256 % size)
  const out: Array<number> = []
  while (out.length < count) {
    const bytes = yield* random.bytes(Math.ceil((count - out.length) * 1.3) + 8)
    for (const byte of bytes) {
      if (byte < limit) out.push(byte % size)
      if (out.length === count) break
    }
  }
  return out
})

/** Mints one key of the format: four groups, the prefix glued to the first. */
export const mintKey = Effect.fnUntraced(function*(format: KeyFormat) {
  const chars = [...new Set(format.charset)]
  const indexes = yield* drawIndexes(4 * format.chunkLength, chars.length)
  const groups: Array<string> = []
  for (let g = 0; g < 4; g++) {
    let group = g === 0 ? format.prefix : ""
    for (let i = 0; i < format.chunkLength; i++) group += chars[indexes[g * format.chunkLength + i]!]
    groups.push(group)
  }
  return groups.join("-")
})
