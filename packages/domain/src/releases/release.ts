/**
 * Releases as pure rules (CONTRACT §9): strict semver (the `semver` package parses, never a hand-written
 * parser), the byte-ordered sort key stores order by, channel visibility and which release an update check offers.
 */
import semver from "semver"
import { Result } from "effect"
import { missingEntitlements } from "../licensing/entitlements.js"
import type { License } from "../licensing/model.js"
import { invalidParam, type InvalidParam } from "../shared/errors.js"
import { type ProductMismatch, productMismatch } from "./errors.js"
import { type Release, type ReleaseChannel, releaseChannels } from "./model.js"

/**
 * The version as semver spells it when it is strict semver (no `v` prefix, no spaces, no loose forms; build
 * metadata allowed), else undefined.
 */
export const strictVersion = (text: string): semver.SemVer | undefined => {
  const parsed = semver.parse(text, { loose: false })
  if (parsed === null) return undefined
  const spelled = parsed.build.length === 0 ? parsed.version : `${parsed.version}+${parsed.build.join(".")}`
  return spelled === text ? parsed : undefined
}

/** Checks that `field` holds strict semver. */
export const checkVersion = (field: string, text: string): Result.Result<semver.SemVer, InvalidParam> => {
  const parsed = strictVersion(text)
  return parsed === undefined ? Result.fail(invalidParam(field, "must be a semantic version (e.g. 1.4.0 or 2.0.0-rc.1)")) : Result.succeed(parsed)
}

/** Digits of a zero-padded number part: semver's numbers are at most `Number.MAX_SAFE_INTEGER` (16 digits). */
const WIDTH = 16
const padded = (n: number) => String(n).padStart(WIDTH, "0")

/**
 * A text whose byte order (PostgreSQL's `COLLATE "C"`, JavaScript's `<`) is semver precedence: the numbers
 * zero-padded, then `~` for a release (sorts after any pre-release) or `!` and the pre-release identifiers, each
 * numeric one as `0` + padded digits (below every alphanumeric one, `1` + itself), joined by `!` (below every
 * identifier character, so a shorter list with an equal start sorts first). Build metadata does not count.
 */
export const versionSortKey = (version: semver.SemVer): string => {
  const core = `${padded(version.major)}.${padded(version.minor)}.${padded(version.patch)}`
  if (version.prerelease.length === 0) return `${core}~`
  const parts = version.prerelease.map((id) => (typeof id === "number" ? `0${padded(id)}` : `1${id}`))
  return `${core}!${parts.join("!")}`
}

/**
 * The product whose releases `license` sees when a request names `requested` (undefined: the license's own), for
 * the update check and the download alike: only the license's own product. A license that names no product sees
 * no release; either way the refusal is `product_mismatch`.
 */
export const licensedProduct = (
  license: Pick<License, "productId">,
  requested: number | undefined
): Result.Result<number, ProductMismatch> =>
  license.productId !== null && (requested === undefined || requested === license.productId)
    ? Result.succeed(license.productId)
    : Result.fail(productMismatch())

/** The channels a client on `channel` sees: it and the more stable ones. */
export const visibleChannels = (channel: ReleaseChannel): ReadonlyArray<ReleaseChannel> =>
  releaseChannels.slice(0, releaseChannels.indexOf(channel) + 1)

/** Whether a client at `current` may install `release` (its `min_app_version`, when set, is at most `current`). */
export const installableFrom = (release: Release, current: semver.SemVer): boolean =>
  release.minAppVersion === null || semver.lte(release.minAppVersion, current)

/**
 * The release an update check offers: among `newestFirst` (the product's releases in visible channels, newest
 * first), the first newer than `current` that `current` may install and whose entitlement codes the license holds
 * (`held`, its effective codes); undefined when there is none.
 */
export const pickUpdate = (
  newestFirst: Iterable<Release>,
  current: semver.SemVer,
  held: ReadonlyArray<string> = []
): Release | undefined => {
  for (const release of newestFirst) {
    if (!semver.gt(release.version, current)) return undefined
    if (installableFrom(release, current) && missingEntitlements(held, release.entitlements).length === 0) return release
  }
  return undefined
}
