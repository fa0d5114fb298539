/** The scalars the wire shapes share: times, nullable integers, free JSON, short texts and entitlement codes. */
import { Schema } from "effect"
import { isoTime, Model } from "@lm/domain/core"
import { Time } from "./Record.js"

export const NullableTime = Schema.NullOr(Time)
export const NullableInt = Schema.NullOr(Schema.Int)
/** Free-form JSON metadata: the domain's `Meta`. */
export const Json = Model.Meta

/** A short text field as a body sends it: at most 255 characters. */
export const ShortText = Schema.String.check(Schema.isMaxLength(255, { message: "must be at most 255 characters" }))

/** An entitlement code (CONTRACT §15): a lower-case letter or digit, then up to 63 of `a-z0-9_.:-`. */
export const EntitlementCode = Schema.String.check(
  Schema.isPattern(Model.entitlementCodePattern, { message: `must match ${Model.entitlementCodePattern.source}` })
).annotate({ description: "An entitlement code: `^[a-z0-9][a-z0-9_.:-]{0,63}$`." })

/** A list of entitlement codes as a body sends it: at most 64 (repeats are dropped, the list is sorted). */
export const EntitlementCodes = Schema.Array(EntitlementCode).check(
  Schema.isMaxLength(Model.MAX_ENTITLEMENTS, { message: `must hold at most ${Model.MAX_ENTITLEMENTS} codes` })
)

/** Epoch milliseconds as ISO 8601 with `Z` (the domain's formatter, which keeps the times in use). */
export const iso = isoTime
/** The second last written by {@link isoNow}: its epoch second and its text up to the dot (`2026-11-28T01:02:03.`). */
let nowSecond = Number.NaN
let nowSecondText = ""

/**
 * The current time as ISO 8601 with `Z`, as `Date#toISOString` writes it: the text up to the second is kept for
 * the calls within that second (a validate answer writes one; `toISOString` per call cost ~2 µs of a cached
 * validate), the milliseconds appended. Other times (before 1970, after 9999) are written by `toISOString`.
 */
export const isoNow = (millis: number): string => {
  if (!(Number.isInteger(millis) && millis >= 0 && millis < 253_402_300_800_000)) return new Date(millis).toISOString()
  const ms = millis % 1000
  const second = millis - ms
  if (second !== nowSecond) {
    nowSecondText = new Date(second).toISOString().slice(0, 20)
    nowSecond = second
  }
  return `${nowSecondText}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`
}
export const isoOrNull = (millis: number | null): string | null => (millis === null ? null : iso(millis))
