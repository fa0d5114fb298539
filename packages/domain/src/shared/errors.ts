/**
 * The errors every feature may fail with: the store cannot be reached, a bad parameter, a move a state machine
 * forbids. Each carries the contract's `code` and HTTP `status` (CONTRACT §12), so that the HTTP adapter maps them
 * mechanically and never invents a code. Extra fields become `data.*` on the wire.
 */
import { Schema } from "effect"

/** The store cannot be reached (503). */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  message: Schema.String
}) {
  readonly code = "service_unavailable"
  readonly status = 503
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

/** A move a state machine (a license's, a subscription's) forbids (409), with the status it was in and the action tried. */
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
