/** What requests send, decoded from the wire: path ids, paging, times and the writable license settings. */
import { Schema, SchemaTransformation } from "effect"
import { License, Model } from "@lm/domain/core"
import { EntitlementCodes, iso, Json } from "./Scalars.js"

/** The largest id the API accepts (ids are bigint in the store, JavaScript numbers here). */
export const MAX_ID = Number.MAX_SAFE_INTEGER


/**
 * A positive integer written in plain decimal digits, in a path or query string: `1`, `42`; not `0`, `1.0`,
 * `1e2`, `-1`. `description` is what the OpenAPI document says of it.
 */
export const positiveIntFromString = (description = "A positive integer.") =>
  Schema.String.annotate({ description }).check(
    Schema.isPattern(/^[0-9]{1,16}$/, { message: "must be a positive integer" }),
    Schema.makeFilter((s: string) => (Number(s) >= 1 && Number(s) <= MAX_ID) || "must be a positive integer")
  ).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: Number, encode: String })))

/** A positive integer id in a JSON body. */
export const Id = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_ID }, { message: "must be a positive integer" }))

/** An integer from `min` to `max`, with a message naming the range. */
export const IntBetween = (min: number, max: number) =>
  Schema.Int.check(Schema.isBetween({ minimum: min, maximum: max }, { message: `must be an integer from ${min} to ${max}` }))

/** `page` and `per_page` of every list (CONTRACT §14): at least 1; `per_page` above 100 becomes 100. */
export const PageQuery = {
  page: Schema.optionalKey(positiveIntFromString("1-based page (default 1). Below 1 or not an integer: 400.")),
  per_page: Schema.optionalKey(
    positiveIntFromString("Items per page (default 20); values above 100 are read as 100. Below 1 or not an integer: 400.")
  )
}

/** The most items one page holds. */
export const MAX_PER_PAGE = 100

/** The page a list asks for: defaults applied and `per_page` clamped to 100. */
export const pageRequest = (query: { readonly page?: number | undefined; readonly per_page?: number | undefined }) => ({
  page: query.page ?? 1,
  perPage: Math.min(query.per_page ?? 20, MAX_PER_PAGE)
})

const isoInput =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/

/**
 * Epoch milliseconds of an ISO 8601 date-time with an offset (`Z`, `+02:00`, `-0530`), or undefined when the
 * text is not one or names a day or time that does not exist (`2026-02-30`, `24:00`). Fractions below a
 * millisecond are dropped.
 */
export const parseIsoTime = (text: string): number | undefined => {
  const m = isoInput.exec(text)
  if (m === null) return undefined
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number]
  const second = m[6] === undefined ? 0 : Number(m[6])
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"))
  const offsetHours = m[10] === undefined ? 0 : Number(m[10])
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11])
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined
  const local = new Date(Date.UTC(year, month - 1, day, hour, minute, second, millis))
  local.setUTCFullYear(year) // Date.UTC reads years 0-99 as 1900-1999
  if (local.getUTCMonth() !== month - 1 || local.getUTCDate() !== day) return undefined
  const offset = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  return local.getTime() - offset
}


const isoTimeExpected = "must be an ISO 8601 date-time with an offset, e.g. 2027-01-31T00:00:00Z"

/**
 * An ISO 8601 date-time with an offset on input (body or query), epoch milliseconds inside; written back as ISO
 * with `Z`. `description` is what the OpenAPI document says of it.
 */
export const timeInput = (
  description = "ISO 8601 date-time with an offset, e.g. `2027-01-31T00:00:00Z` or `2027-01-31T02:00:00+02:00`."
) =>
  Schema.String.annotate({ description }).check(
    Schema.makeFilter(
      (s: string) => parseIsoTime(s) !== undefined || isoTimeExpected,
      { message: isoTimeExpected }
    )
  ).pipe(
    Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: (s: string) => parseIsoTime(s)!, encode: iso }))
  )

/** {@link timeInput} with the default description. */
export const TimeInput = timeInput()

/** The most bytes of JSON a `meta` object may take (the domain's limit). */
export const MAX_META_BYTES = License.settingLimits.maxMetaBytes

/** Free JSON metadata: an object of at most 16 KiB (its JSON text, UTF-8). */
export const MetaInput = Json.check(
  Schema.makeFilter((meta: Record<string, unknown>) =>
    License.jsonBytes(meta) <= MAX_META_BYTES || `must be at most ${MAX_META_BYTES} bytes of JSON`
  )
)

/** The most seconds a lease or heartbeat interval may last (365 days; the domain's limit). */
export const MAX_DURATION_SECONDS = License.settingLimits.maxDurationSeconds
/** The most days of relative validity, grace, or a renewal by days (100 years; the domain's limit). */
export const MAX_DAYS = License.settingLimits.maxDays
/** The largest seat limit (a 32-bit integer; the domain's limit). */
export const MAX_ACTIVATIONS = License.settingLimits.maxActivations

/**
 * The writable license settings as a body sends them (POST and PUT `/licenses`, generate). Every field may be
 * null: a nullable setting becomes null; any other goes back to its default.
 */
export const LicenseSettingsInput = {
  product_id: Schema.optionalKey(Schema.NullOr(Id)),
  order_id: Schema.optionalKey(Schema.NullOr(Id)),
  user_id: Schema.optionalKey(Schema.NullOr(Id)),
  max_activations: Schema.optionalKey(Schema.NullOr(IntBetween(0, MAX_ACTIVATIONS)).annotate({
    description: "Seat limit; null is unlimited. 0 refuses every new activation."
  })),
  overage_strategy: Schema.optionalKey(Schema.NullOr(Model.OverageStrategy)),
  is_floating: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  lease_duration: Schema.optionalKey(Schema.NullOr(IntBetween(1, MAX_DURATION_SECONDS)).annotate({
    description: "Seconds a floating lease lasts after activation or a heartbeat (default 600)."
  })),
  require_heartbeat: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  heartbeat_interval: Schema.optionalKey(Schema.NullOr(IntBetween(1, MAX_DURATION_SECONDS)).annotate({
    description: "Seconds between heartbeats (default 600); a machine is dead after twice this without one."
  })),
  valid_for_days: Schema.optionalKey(Schema.NullOr(IntBetween(1, MAX_DAYS)).annotate({
    description: "Relative validity in days (at most 36500), applied at first activation and by renew."
  })),
  expires_at: Schema.optionalKey(Schema.NullOr(TimeInput).annotate({
    description: "ISO 8601 date-time with an offset; null is perpetual. Past times are accepted."
  })),
  grace_days: Schema.optionalKey(Schema.NullOr(IntBetween(0, MAX_DAYS)).annotate({
    description: "Days the license stays valid after expires_at (default 0, at most 36500)."
  })),
  meta: Schema.optionalKey(Schema.NullOr(MetaInput).annotate({
    description: "Free JSON object of at most 16 KiB (its JSON text in UTF-8); null is {}."
  })),
  policy_id: Schema.optionalKey(Schema.NullOr(Id).annotate({
    description: "A policy (plan): its settings are defaults copied into the license when it is created with it or " +
      "moved to it (the body's fields win); its entitlements are live. Null detaches the license from its policy. " +
      "An unknown id is 404 `policy_not_found`."
  })),
  entitlements: Schema.optionalKey(Schema.NullOr(EntitlementCodes).annotate({
    description: "The license's own entitlement codes (at most 64); null is none."
  }))
}

/** A body holding some of {@link LicenseSettingsInput}, decoded. */
export type LicenseSettingsBody = Schema.Struct.Type<typeof LicenseSettingsInput>

const settingNames = {
  product_id: "productId",
  order_id: "orderId",
  user_id: "userId",
  max_activations: "maxActivations",
  overage_strategy: "overageStrategy",
  is_floating: "isFloating",
  lease_duration: "leaseDuration",
  require_heartbeat: "requireHeartbeat",
  heartbeat_interval: "heartbeatInterval",
  valid_for_days: "validForDays",
  expires_at: "expiresAt",
  grace_days: "graceDays",
  meta: "meta",
  policy_id: "policyId",
  entitlements: "entitlements"
} as const satisfies Record<keyof LicenseSettingsBody, keyof Model.LicenseSettings>

/**
 * The settings a body names, in the domain's terms. A null clears: the nullable settings (`product_id`,
 * `order_id`, `user_id`, `max_activations`, `valid_for_days`, `expires_at`) become null, the others return to
 * their defaults (`meta` to `{}`, `lease_duration` to 600, ...). Fields the body leaves out are left out.
 */
export const licenseSettingsFromWire = (body: LicenseSettingsBody): Partial<Model.LicenseSettings> => {
  const out: Record<string, unknown> = {}
  for (const [wire, name] of Object.entries(settingNames) as Array<[keyof LicenseSettingsBody, keyof Model.LicenseSettings]>) {
    const value = body[wire]
    if (value === undefined) continue
    out[name] = value === null ? License.defaultLicenseSettings[name] : value
  }
  return out as Partial<Model.LicenseSettings>
}
