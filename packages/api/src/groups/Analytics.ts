/**
 * The `analytics` routes of the lm/v1 API (CONTRACT §11): the overview of a period, the validation series, the
 * anomalies current now and the licenses expiring soon. Read-only management routes (HTTP Basic API key).
 */
import { Schema, SchemaTransformation } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { LicenseWire, positiveIntFromString, Time, timeInput, wireRecord } from "../wire/Wire.js"

/** The most days GET /analytics/expiring looks ahead (100 years). */
export const MAX_EXPIRING_DAYS = 36_500

/** A whole number of days, 0 to {@link MAX_EXPIRING_DAYS}, in a query string. */
const DaysFromString = Schema.String.annotate({ description: `Days ahead, 0 to ${MAX_EXPIRING_DAYS} (default 30).` }).check(
  Schema.isPattern(/^[0-9]{1,5}$/, { message: `must be an integer from 0 to ${MAX_EXPIRING_DAYS}` }),
  Schema.makeFilter((s: string) => Number(s) <= MAX_EXPIRING_DAYS || `must be an integer from 0 to ${MAX_EXPIRING_DAYS}`)
).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: Number, encode: String })))

const Counts = (names: ReadonlyArray<string>) => Schema.Struct(Object.fromEntries(names.map((n) => [n, Schema.Int])))

export const OverviewWire = Schema.Struct({
  licenses: Schema.Struct({ total: Schema.Int, by_status: Counts(Model.licenseStatuses) }),
  seats: Schema.Struct({ active_machines: Schema.Int, total_seats: Schema.Int, utilization: Schema.NullOr(Schema.Number) }),
  validations: Schema.Struct({ total: Schema.Int, valid: Schema.Int, invalid: Schema.Int }),
  activations: Schema.Int,
  subscriptions: Schema.Struct({
    by_status: Schema.Record(Schema.String, Schema.Int),
    mrr: Schema.Array(Schema.Struct({ currency: Schema.String, amount: Schema.String }))
  }),
  expiring: Schema.Struct({ in_7_days: Schema.Int, in_30_days: Schema.Int }),
  app_versions: Schema.Array(Schema.Struct({ app_version: Schema.NullOr(Schema.String), machines: Schema.Int })),
  top_licenses: Schema.Array(Schema.Struct({ license_key: Schema.String, validations: Schema.Int }))
})
export type OverviewWire = typeof OverviewWire.Type

export const SeriesWire = Schema.Struct({
  series: Schema.Array(Schema.Struct({ t: Time, total: Schema.Int, valid: Schema.Int, invalid: Schema.Int })),
  interval: Model.AnalyticsInterval,
  from: Time,
  to: Time
})
export type SeriesWire = typeof SeriesWire.Type

/** An anomaly on the wire. */
export const AnomalyWire = wireRecord(Model.Anomaly)
export type AnomalyWire = typeof AnomalyWire.Type

/** The analytics routes. */
export class AnalyticsGroup extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("overview", "/analytics/overview", {
      query: {
        period: Schema.optionalKey(Model.AnalyticsPeriod.annotate({ description: "The period validations, activations and top licenses cover (default `30d`)." }))
      },
      success: Success(OverviewWire)
    }).annotateMerge(OpenApi.annotations({
      summary: "Overview",
      description: "Licenses by status, seat utilization (`active_machines / total_seats` over issued licenses with a " +
        "seat limit; null when none has one), validations and activations in the period (from hourly counters; a call " +
        "shows within a few seconds), subscriptions (by status and MRR per currency), licenses expiring within 7 and " +
        "30 days, app versions of the machines holding a seat, and the 10 licenses with the most validations."
    })),
    HttpApiEndpoint.get("validations", "/analytics/validations", {
      query: {
        from: Schema.optionalKey(timeInput("Start of the range, ISO 8601 with an offset (default: 30 days before `to`).")),
        to: Schema.optionalKey(timeInput("End of the range, exclusive, ISO 8601 with an offset (default: now).")),
        interval: Schema.optionalKey(Model.AnalyticsInterval.annotate({ description: "Bucket width, UTC hours or days (default `day`)." })),
        license_key: Schema.optionalKey(Schema.String.annotate({ description: "Only this license's validations." })),
        product_id: Schema.optionalKey(positiveIntFromString("Only validations of licenses of this product."))
      },
      success: Success(SeriesWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Validation series",
      description: "`{series: [{t, total, valid, invalid}]}` from the bucket holding `from` to the one holding the end, " +
        "dense (empty buckets are 0). More than 1000 buckets, or `from` not before `to`: 400. An unknown `license_key`: " +
        "404 `license_not_found`."
    })),
    HttpApiEndpoint.get("anomalies", "/analytics/anomalies", {
      success: Success(Schema.Struct({ anomalies: Schema.Array(AnomalyWire) }))
    }).annotateMerge(OpenApi.annotations({
      summary: "Anomalies",
      description: "The anomalies current now: `fingerprint_churn` (new fingerprints activated on a license within 24 h, " +
        "default 5 or more), `ip_churn` (client addresses within 24 h, default 10), `validation_spike` (an hour's " +
        "validations above 3 times its 7-day hourly mean and at least 20), `failed_validation_burst` (refusals within " +
        "an hour, default 20); thresholds set with `LM_ANOMALY_*`. Hourly rules look at the current and the previous UTC " +
        "hour. Each newly detected anomaly is announced once a day at most with the `anomaly.detected` event; " +
        "`detected_at` is when it was announced."
    })),
    HttpApiEndpoint.get("expiring", "/analytics/expiring", {
      query: { days: Schema.optionalKey(DaysFromString) },
      success: Success(Schema.Struct({ licenses: Schema.Array(LicenseWire) }))
    }).annotateMerge(OpenApi.annotations({
      summary: "Expiring licenses",
      description: "Licenses whose `expires_at` falls within the next `days` days, soonest first (at most 1000)."
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Analytics", description: "Usage, anomalies and renewals (API key required)." }))
{}
