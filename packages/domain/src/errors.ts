/**
 * The domain's errors. Each carries the contract's `code` and HTTP `status` (CONTRACT §12), so that the
 * HTTP adapter maps them mechanically and never invents a code. Extra fields become `data.*` on the wire.
 */
import { Schema } from "effect"

/** Codes that refuse a client call on a license or machine (403). */
export const refusalCodes = [
  "blacklisted",
  "license_terminated",
  "license_revoked",
  "license_suspended",
  "license_pending",
  "license_expired",
  "machine_revoked"
] as const
export const RefusalCode = Schema.Literals(refusalCodes)
export type RefusalCode = typeof RefusalCode.Type

/** A client call refused because of the license's or machine's standing (403). */
export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  code: RefusalCode,
  message: Schema.String
}) {
  readonly status = 403
}

const refusalMessages: Record<RefusalCode, string> = {
  blacklisted: "This license, device or address is blacklisted.",
  license_terminated: "The license has been terminated.",
  license_revoked: "The license has been revoked.",
  license_suspended: "The license is suspended.",
  license_pending: "The license has not been issued yet.",
  license_expired: "The license has expired.",
  machine_revoked: "This device has been revoked for the license."
}

/** The refusal for a code, with its standard message. */
export const refused = (code: RefusalCode): Refused => new Refused({ code, message: refusalMessages[code] })

export class LicenseNotFound extends Schema.TaggedError<LicenseNotFound>()("LicenseNotFound", {
  message: Schema.String
}) {
  readonly code = "license_not_found"
  readonly status = 404
}
export const licenseNotFound = () => new LicenseNotFound({ message: "No license has that key." })

export class MachineNotFound extends Schema.TaggedError<MachineNotFound>()("MachineNotFound", {
  message: Schema.String
}) {
  readonly code = "machine_not_found"
  readonly status = 404
}
export const machineNotFound = () => new MachineNotFound({ message: "No such machine on that license." })

export class GeneratorNotFound extends Schema.TaggedError<GeneratorNotFound>()("GeneratorNotFound", {
  message: Schema.String
}) {
  readonly code = "generator_not_found"
  readonly status = 404
}
export const generatorNotFound = () => new GeneratorNotFound({ message: "No generator has that id." })

export class SubscriptionNotFound extends Schema.TaggedError<SubscriptionNotFound>()("SubscriptionNotFound", {
  message: Schema.String
}) {
  readonly code = "subscription_not_found"
  readonly status = 404
}
export const subscriptionNotFound = () => new SubscriptionNotFound({ message: "No subscription has that id." })

export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  message: Schema.String
}) {
  readonly code = "api_key_not_found"
  readonly status = 404
}

export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", {
  message: Schema.String
}) {
  readonly code = "webhook_not_found"
  readonly status = 404
}
export const webhookNotFound = () => new WebhookNotFound({ message: "No webhook has that id." })
/** A delivery that is not one of that webhook's (the contract has no code of its own for it). */
export const deliveryNotFound = () => new WebhookNotFound({ message: "That webhook has no delivery with that id." })

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
  message: Schema.String
}) {
  readonly status = 403
}
export const notEntitled = (code: string) =>
  new NotEntitled({ code, message: `The license does not entitle this client to updates (${code}).` })

export class LicenseExists extends Schema.TaggedError<LicenseExists>()("LicenseExists", {
  message: Schema.String
}) {
  readonly code = "license_exists"
  readonly status = 409
}
export const licenseExists = () => new LicenseExists({ message: "A license with that key already exists." })

/** A move the license state machine forbids (409), with the status it was in and the action tried. */
export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  message: Schema.String,
  from: Schema.String,
  action: Schema.String
}) {
  readonly code = "invalid_transition"
  readonly status = 409
}
export const invalidTransition = (from: string, action: string, subject: "license" | "subscription" = "license") =>
  new InvalidTransition({ message: `Cannot ${action} a ${subject} that is ${from}.`, from, action })

/** A write on a terminated license (409). */
export class LicenseTerminated extends Schema.TaggedError<LicenseTerminated>()("LicenseTerminated", {
  message: Schema.String
}) {
  readonly code = "license_terminated"
  readonly status = 409
}
export const licenseTerminated = () => new LicenseTerminated({ message: "The license is terminated; it can only be deleted." })

/** Heartbeat of a machine that no longer holds a seat (409): the client activates again. */
export class MachineInactive extends Schema.TaggedError<MachineInactive>()("MachineInactive", {
  message: Schema.String
}) {
  readonly code = "machine_inactive"
  readonly status = 409
}
export const machineInactive = () =>
  new MachineInactive({ message: "This machine no longer holds a seat; activate it again." })

/** No seat is free under the license's ceiling (422). */
export class MachineLimitExceeded extends Schema.TaggedError<MachineLimitExceeded>()("MachineLimitExceeded", {
  message: Schema.String,
  max_activations: Schema.NullOr(Schema.Int),
  activation_count: Schema.Int,
  ceiling: Schema.NullOr(Schema.Int)
}) {
  readonly code = "machine_limit_exceeded"
  readonly status = 422
}

/** Terminate without `confirm: true` (400). */
export class ConfirmationRequired extends Schema.TaggedError<ConfirmationRequired>()("ConfirmationRequired", {
  message: Schema.String
}) {
  readonly code = "confirmation_required"
  readonly status = 400
}

/** A field-level input error the domain finds (400 `rest_invalid_param`), naming each bad field. */
export class InvalidParam extends Schema.TaggedError<InvalidParam>()("InvalidParam", {
  message: Schema.String,
  params: Schema.Record(Schema.String, Schema.String)
}) {
  readonly code = "rest_invalid_param"
  readonly status = 400
}
export const invalidParam = (field: string, problem: string) =>
  new InvalidParam({ message: `Invalid parameter: ${field}.`, params: { [field]: problem } })

/** Missing or wrong API credentials (401). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  readonly code = "rest_unauthorized"
  readonly status = 401
}

/** Right credentials, but the scope or a guard forbids the request (403). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {
  readonly code = "rest_forbidden"
  readonly status = 403
}

/** The store cannot be reached (503). */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  message: Schema.String
}) {
  readonly code = "service_unavailable"
  readonly status = 503
}

/** A request over a rate limit (CONTRACT §11): 429, `retry_after` whole seconds (also sent as `Retry-After`). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retry_after: Schema.Int
}) {
  readonly code = "rest_rate_limited"
  readonly status = 429
}
export const rateLimited = (retryAfterSeconds: number) =>
  new RateLimited({ message: "Too many requests; try again later.", retry_after: retryAfterSeconds })

/** Every error the domain's services can fail with. */
export type DomainError =
  | Refused
  | LicenseNotFound
  | MachineNotFound
  | GeneratorNotFound
  | ApiKeyNotFound
  | SubscriptionNotFound
  | WebhookNotFound
  | ReleaseNotFound
  | ReleaseExists
  | ProductMismatch
  | DownloadTokenInvalid
  | DownloadTokenExpired
  | NotEntitled
  | LicenseExists
  | InvalidTransition
  | LicenseTerminated
  | MachineInactive
  | MachineLimitExceeded
  | ConfirmationRequired
  | InvalidParam
  | Unauthorized
  | Forbidden
  | StorageUnavailable
  | RateLimited
