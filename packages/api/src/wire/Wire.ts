/**
 * The wire shapes of the contract's objects (snake_case, ISO 8601 times with `Z`) and the mapping from the
 * domain's values (camelCase, epoch milliseconds). Handlers stay thin: they call a domain service and hand
 * its result to one of these functions.
 */
import { Schema, SchemaTransformation } from "effect"
import { isoTime, License, type Machine, Model, Money } from "@lm/domain/core"
import { Time, wireRecord } from "./Record.js"

export { Time, type WireField, type WireFields, type WireRecord, wireRecord, type WireShape } from "./Record.js"
const NullableTime = Schema.NullOr(Time)
const NullableInt = Schema.NullOr(Schema.Int)
/** Free-form JSON metadata: the domain's `Meta`. */
const Json = Model.Meta

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
/** The current time as ISO 8601 with `Z`: never the same twice, so not kept. */
export const isoNow = (millis: number): string => new Date(millis).toISOString()
export const isoOrNull = (millis: number | null): string | null => (millis === null ? null : iso(millis))

/** A machine's hardware component on the wire. */
export const ComponentWire = wireRecord(Model.Component)

/** A machine on the wire: its record but the seat deadline, which is the store's index. */
export const MachineWire = wireRecord(Model.Machine, {
  omit: ["seatDeadline"],
  supplied: { components: Schema.Array(ComponentWire) }
})
export type MachineWire = typeof MachineWire.Type

/** A machine on the wire. */
export const machineToWire = (m: Model.Machine): MachineWire =>
  MachineWire.from(m, { components: m.components.map((c) => ComponentWire.from(c)) })

/**
 * A license on the wire: its record with the status it reports now (in place of its stored state) and the seats
 * held, without who suspended it or its revision.
 */
export const LicenseWire = wireRecord(Model.License, {
  omit: ["state", "suspendedBy", "revision"],
  rename: { key: "license_key" },
  supplied: {
    status: Model.LicenseStatus,
    activation_count: Schema.Int,
    effective_entitlements: Schema.Array(Schema.String).annotate({
      description: "Read-only: the sorted union of the license's own codes and its policy's (live from the policy)."
    })
  },
  after: {
    status: "license_key",
    activation_count: "max_activations",
    meta: "subscription_id",
    policy_id: "meta",
    entitlements: "policy_id",
    effective_entitlements: "entitlements"
  },
  describe: {
    policy_id: "The policy (plan) the license was made from or moved to, or null.",
    entitlements: "The license's own entitlement codes, sorted."
  }
})
export type LicenseWire = typeof LicenseWire.Type

/** A license with its machines (GET /licenses/{key}). */
export const LicenseDetailWire = Schema.Struct({ ...LicenseWire.fields, machines: Schema.Array(MachineWire) })
export type LicenseDetailWire = typeof LicenseDetailWire.Type

/** A license as it reports itself now. */
export const licenseToWire = ({ license, status, activationCount, effectiveEntitlements }: Machine.LicenseView): LicenseWire =>
  LicenseWire.from(license, {
    status,
    activation_count: activationCount,
    effective_entitlements: effectiveEntitlements ?? license.entitlements
  })

/** A license with its machines on the wire (what `Licenses.get` answers). */
export const licenseDetailToWire = (
  detail: Machine.LicenseView & { readonly machines: ReadonlyArray<Model.Machine> }
): LicenseDetailWire => ({
  ...licenseToWire(detail),
  machines: detail.machines.map(machineToWire)
})

/** A policy on the wire (CONTRACT §15). */
export const PolicyWire = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  product_id: NullableInt,
  entitlements: Schema.Array(Schema.String),
  max_activations: NullableInt,
  overage_strategy: Model.OverageStrategy,
  is_floating: Schema.Boolean,
  lease_duration: Schema.Int,
  require_heartbeat: Schema.Boolean,
  heartbeat_interval: Schema.Int,
  valid_for_days: NullableInt,
  grace_days: Schema.Int,
  license_count: Schema.Int.annotate({ description: "Read-only: how many licenses refer to the policy." }),
  created_at: Time,
  updated_at: Time
})
export type PolicyWire = typeof PolicyWire.Type

export const policyToWire = ({ licenseCount, policy: p }: { readonly policy: Model.Policy; readonly licenseCount: number }): PolicyWire => ({
  id: p.id,
  name: p.name,
  product_id: p.productId,
  entitlements: p.entitlements,
  max_activations: p.maxActivations,
  overage_strategy: p.overageStrategy,
  is_floating: p.isFloating,
  lease_duration: p.leaseDuration,
  require_heartbeat: p.requireHeartbeat,
  heartbeat_interval: p.heartbeatInterval,
  valid_for_days: p.validForDays,
  grace_days: p.graceDays,
  license_count: licenseCount,
  created_at: iso(p.createdAt),
  updated_at: iso(p.updatedAt)
})

/** A generator on the wire, with the number of keys waiting in its pool. */
export const GeneratorWire = wireRecord(Model.Generator, {
  supplied: { pool_size: Schema.Int },
  after: { pool_size: "default_is_floating" }
})
export type GeneratorWire = typeof GeneratorWire.Type

export const generatorToWire = ({ generator, poolSize }: { readonly generator: Model.Generator; readonly poolSize: number }): GeneratorWire =>
  GeneratorWire.from(generator, { pool_size: poolSize })

/** An API key on the wire: never its hashes. */
export const ApiKeyWire = wireRecord(Model.ApiKey, { omit: ["consumerKeyHash", "consumerSecretHash"] })
export type ApiKeyWire = typeof ApiKeyWire.Type

export const apiKeyToWire = (k: Model.ApiKey): ApiKeyWire => ApiKeyWire.from(k)

/** A webhook on the wire: never its secret. */
export const WebhookWire = wireRecord(Model.Webhook, { omit: ["sealedSecret", "failingSince", "updatedAt"] })
export type WebhookWire = typeof WebhookWire.Type

export const webhookToWire = (w: Model.Webhook): WebhookWire => WebhookWire.from(w)

/** A delivery of an event to a webhook on the wire. */
export const DeliveryWire = wireRecord(Model.WebhookDelivery, { omit: ["webhookId", "lockedUntil"] })
export type DeliveryWire = typeof DeliveryWire.Type

export const deliveryToWire = (d: Model.WebhookDelivery): DeliveryWire => DeliveryWire.from(d)

/** The `meta` of a list: total, page, per_page and total_pages (0 when total is 0). */
export const ListMeta = Schema.Struct({ total: Schema.Int, page: Schema.Int, per_page: Schema.Int, total_pages: Schema.Int })
export type ListMeta = typeof ListMeta.Type

export const listMeta = (total: number, page: number, perPage: number): ListMeta => ({
  total,
  page,
  per_page: perPage,
  total_pages: total === 0 ? 0 : Math.ceil(total / perPage)
})

// ---------------------------------------------------------------------------------------------------------
// Inputs: path ids, paging, times and the writable license settings, decoded from the wire.
// ---------------------------------------------------------------------------------------------------------

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

// ---- subscriptions (CONTRACT §10) ----------------------------------------------------------------------------

/** A subscription's item on the wire. */
export const ItemWire = Schema.Struct({ id: Schema.Int, product_id: Schema.NullOr(Schema.Int), quantity: Schema.Int, amount: Schema.String })

/** A subscription on the wire; money as decimal strings in its currency. */
export const SubscriptionWire = Schema.Struct({
  id: Schema.Int,
  status: Model.SubscriptionStatus,
  user_id: Schema.Int,
  product_id: Schema.NullOr(Schema.Int),
  license_id: Schema.Int,
  billing_period: Model.BillingPeriod,
  billing_interval: Schema.Int,
  amount: Schema.String,
  currency: Schema.String,
  payment_method: Schema.NullOr(Schema.String),
  trial_end: Schema.NullOr(Time),
  current_period_start: Time,
  current_period_end: Time,
  next_payment_at: Schema.NullOr(Time),
  last_payment_at: Schema.NullOr(Time),
  end_date: Schema.NullOr(Time),
  cancel_at_period_end: Schema.Boolean,
  paused_at: Schema.NullOr(Time),
  cancelled_at: Schema.NullOr(Time),
  items: Schema.Array(ItemWire),
  billing_provider: Schema.NullOr(Model.BillingProvider),
  external_id: Schema.NullOr(Schema.String),
  created_at: Time,
  updated_at: Time
})
export type SubscriptionWire = typeof SubscriptionWire.Type

export const subscriptionToWire = (s: Model.Subscription): SubscriptionWire => ({
  id: s.id,
  status: s.status,
  user_id: s.userId,
  product_id: s.productId,
  license_id: s.licenseId,
  billing_period: s.billingPeriod,
  billing_interval: s.billingInterval,
  amount: Money.formatAmount(s.amount, s.currency),
  currency: s.currency,
  payment_method: s.paymentMethod,
  trial_end: isoOrNull(s.trialEnd),
  current_period_start: iso(s.currentPeriodStart),
  current_period_end: iso(s.currentPeriodEnd),
  next_payment_at: isoOrNull(s.nextPaymentAt),
  last_payment_at: isoOrNull(s.lastPaymentAt),
  end_date: isoOrNull(s.endDate),
  cancel_at_period_end: s.cancelAtPeriodEnd,
  paused_at: isoOrNull(s.pausedAt),
  cancelled_at: isoOrNull(s.cancelledAt),
  items: s.items.map((item) => ({ id: item.id, product_id: item.productId, quantity: item.quantity, amount: Money.formatAmount(item.amount, s.currency) })),
  billing_provider: s.billingProvider,
  external_id: s.externalId,
  created_at: iso(s.createdAt),
  updated_at: iso(s.updatedAt)
})

/** A received billing provider event on the wire (CONTRACT §20). */
export const BillingEventWire = Schema.Struct({
  id: Schema.String.annotate({ description: "The provider's event id (Lemon Squeezy: the SHA-256 of the body)." }),
  provider: Model.BillingProvider,
  type: Schema.String,
  external_id: Schema.NullOr(Schema.String),
  subscription_id: Schema.NullOr(Schema.Int),
  outcome: Model.BillingEventOutcome,
  received_at: Time
})
export type BillingEventWire = typeof BillingEventWire.Type

export const billingEventToWire = (e: Model.BillingEvent): BillingEventWire => ({
  id: e.eventId,
  provider: e.provider,
  type: e.type,
  external_id: e.externalId,
  subscription_id: e.subscriptionId,
  outcome: e.outcome,
  received_at: iso(e.receivedAt)
})

const PlanWire = Schema.Struct({ amount: Schema.String, billing_period: Model.BillingPeriod, billing_interval: Schema.Int, product_id: Schema.NullOr(Schema.Int) })

/** A renewal record on the wire. */
export const RenewalWire = Schema.Struct({
  id: Schema.Int,
  type: Model.RenewalType,
  amount: Schema.String,
  currency: Schema.String,
  status: Model.RenewalStatus,
  period_start: Time,
  period_end: Time,
  proration: Schema.NullOr(Schema.Struct({ credit: Schema.String, charge: Schema.String, net: Schema.String })),
  from: Schema.NullOr(PlanWire),
  to: Schema.NullOr(PlanWire),
  transaction_id: Schema.NullOr(Schema.String),
  created_at: Time
})
export type RenewalWire = typeof RenewalWire.Type

export const renewalToWire = (r: Model.RenewalRecord): RenewalWire => {
  const money = (minor: number) => Money.formatAmount(minor, r.currency)
  const plan = (p: Model.Plan | null) =>
    p === null ? null : { amount: money(p.amount), billing_period: p.billingPeriod, billing_interval: p.billingInterval, product_id: p.productId }
  return {
    id: r.id,
    type: r.type,
    amount: money(r.amount),
    currency: r.currency,
    status: r.status,
    period_start: iso(r.periodStart),
    period_end: iso(r.periodEnd),
    proration: r.proration === null ? null : { credit: money(r.proration.credit), charge: money(r.proration.charge), net: money(r.proration.net) },
    from: plan(r.from),
    to: plan(r.to),
    transaction_id: r.transactionId,
    created_at: iso(r.createdAt)
  }
}
/** A release on the wire (CONTRACT §9): never where the store keeps its artifact, nor its sort key. */
export const ReleaseWire = wireRecord(Model.Release, {
  omit: ["versionKey", "artifactKey"],
  after: { entitlements: "min_app_version" },
  describe: { entitlements: "Codes a license must hold to be offered and download it." }
})
export type ReleaseWire = typeof ReleaseWire.Type

export const releaseToWire = (r: Model.Release): ReleaseWire => ReleaseWire.from(r)
