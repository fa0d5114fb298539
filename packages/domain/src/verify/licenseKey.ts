/**
 * License-key normalisation, the one definition: the server normalises every key it reads with it (through
 * `keys.ts`) and client software uses it to look keys up in a CRL. Dependency-free, so it runs in browsers.
 *
 * @since 0.1.0
 */

/** ASCII whitespace (tab, line feed, vertical tab, form feed, carriage return, space) at either end. */
const EDGE_ASCII_WHITESPACE = /^[\t\n\v\f\r ]+|[\t\n\v\f\r ]+$/g

/** Any character outside ASCII. */
const NON_ASCII = /[^\x00-\x7f]/

/**
 * Normalises a license key the way the server does (CONTRACT §3): ASCII whitespace trimmed at both ends and ASCII
 * letters upper-cased, nothing else. Unicode's wider rules are not used (`"ſ".toUpperCase()` is `"S"`, `"ﬁ"`
 * becomes `"FI"`, `trim()` drops a BOM), so every client, in any language, gets the same key and CRL hash; a
 * key with a non-ASCII character keeps it and is refused by the server ({@link hasNonAscii}).
 */
export const normaliseLicenseKey = (key: string): string => {
  const trimmed = key.replace(EDGE_ASCII_WHITESPACE, "")
  return hasNonAscii(trimmed) ? trimmed.replace(/[a-z]+/g, (letters) => letters.toUpperCase()) : trimmed.toUpperCase()
}

/** Whether a string holds a character outside ASCII: such a key is never valid. */
export const hasNonAscii = (text: string): boolean => NON_ASCII.test(text)
