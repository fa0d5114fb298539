/**
 * License-key normalisation, the one definition: the server normalises every key it reads with it (through
 * `keys.ts`) and client software uses it to look keys up in a CRL. Dependency-free, so it runs in browsers.
 *
 * @since 0.1.0
 */

/** Normalises a license key the way the server does: trimmed and upper-cased. */
export const normaliseLicenseKey = (key: string): string => key.trim().toUpperCase()
