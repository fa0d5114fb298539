/** The licensing feature's errors (CONTRACT §3, §4, §12): refusals of client calls, missing licenses and machines, seats. */
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

export class LicenseExists extends Schema.TaggedError<LicenseExists>()("LicenseExists", {
  message: Schema.String
}) {
  readonly code = "license_exists"
  readonly status = 409
}
export const licenseExists = () => new LicenseExists({ message: "A license with that key already exists." })

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

export class PolicyNotFound extends Schema.TaggedError<PolicyNotFound>()("PolicyNotFound", {
  message: Schema.String
}) {
  readonly code = "policy_not_found"
  readonly status = 404
}
export const policyNotFound = () => new PolicyNotFound({ message: "No policy has that id." })

/** A policy that licenses still refer to cannot be deleted (409). */
export class PolicyInUse extends Schema.TaggedError<PolicyInUse>()("PolicyInUse", {
  message: Schema.String
}) {
  readonly code = "policy_in_use"
  readonly status = 409
}
export const policyInUse = () =>
  new PolicyInUse({ message: "Licenses still refer to this policy: move them to another policy (or none) first." })
