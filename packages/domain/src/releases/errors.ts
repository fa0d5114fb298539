/** The releases feature's errors (CONTRACT §9, §12). */
import { Schema } from "effect"

export class ReleaseNotFound extends Schema.TaggedError<ReleaseNotFound>()("ReleaseNotFound", {
  message: Schema.String
}) {
  readonly code = "release_not_found"
  readonly status = 404
}
export const releaseNotFound = () => new ReleaseNotFound({ message: "No release has that id." })

/** A release of the same product and version exists already (409). */
export class ReleaseExists extends Schema.TaggedError<ReleaseExists>()("ReleaseExists", {
  message: Schema.String
}) {
  readonly code = "release_exists"
  readonly status = 409
}
export const releaseExists = () => new ReleaseExists({ message: "A release of that product with that version already exists." })

/** An update check or download for another product than the license's (403). */
export class ProductMismatch extends Schema.TaggedError<ProductMismatch>()("ProductMismatch", {
  message: Schema.String
}) {
  readonly code = "product_mismatch"
  readonly status = 403
}
export const productMismatch = () => new ProductMismatch({ message: "The license is not for that product." })

/** A download token that does not verify, or names no release of the license's product (403). */
export class DownloadTokenInvalid extends Schema.TaggedError<DownloadTokenInvalid>()("DownloadTokenInvalid", {
  message: Schema.String
}) {
  readonly code = "download_token_invalid"
  readonly status = 403
}
export const downloadTokenInvalid = () => new DownloadTokenInvalid({ message: "The download token is not valid." })

/** A download token past its `exp` (403): check for the update again to get a fresh one. */
export class DownloadTokenExpired extends Schema.TaggedError<DownloadTokenExpired>()("DownloadTokenExpired", {
  message: Schema.String
}) {
  readonly code = "download_token_expired"
  readonly status = 403
}
export const downloadTokenExpired = () =>
  new DownloadTokenExpired({ message: "The download token has expired; check for the update again." })

/**
 * An update check or download for a license that does not validate (403), with the code validation answered
 * (`license_revoked`, `fingerprint_not_activated`, …).
 */
export class NotEntitled extends Schema.TaggedError<NotEntitled>()("NotEntitled", {
  code: Schema.String,
  message: Schema.String,
  /** With `entitlements_missing`: the release's codes the license does not hold. */
  missing: Schema.optionalKey(Schema.Array(Schema.String))
}) {
  readonly status = 403
}
export const notEntitled = (code: string, missing: ReadonlyArray<string> = []) =>
  new NotEntitled({
    code,
    message: `The license does not entitle this client to updates (${code}).`,
    ...(missing.length > 0 ? { missing } : {})
  })
