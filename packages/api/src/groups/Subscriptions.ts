/**
 * The `subscriptions` routes of the lm/v1 API (CONTRACT §10): create (binding or creating a license), list, get
 * (with its license), change, the actions pause, resume, cancel, renew and switch, and the renewal history.
 * Money is a decimal string in the subscription's currency (ISO 4217), parsed exactly. Management routes: HTTP
 * Basic API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { CreateLicenseBody, NoFields } from "./Licenses.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { Conflict, NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import {
  Id,
  IntBetween,
  LicenseWire,
  ListMeta,
  MAX_ACTIVATIONS,
  PageQuery,
  positiveIntFromString,
  RenewalWire,
  ShortText,
  SubscriptionWire,
  TimeInput
} from "../wire/Wire.js"

const idParam = { id: positiveIntFromString("The subscription's id (a positive integer).") }

/** An amount on the wire: a decimal string in the currency's minor unit (`"19.99"` USD, `"500"` JPY). */
export const AmountInput = Schema.String.annotate({
  description: "A decimal string, at most as many decimals as the currency has (USD 2, JPY 0, KWD 3), e.g. `\"19.99\"`; " +
    "parsed exactly, never through a float."
})

const ItemInput = Schema.Struct({
  product_id: Schema.optionalKey(Schema.NullOr(Id)),
  quantity: Schema.optionalKey(IntBetween(1, 2_147_483_647)),
  amount: AmountInput
})

const planFields = {
  billing_period: Model.BillingPeriod.annotate({ description: "The unit of a billing period." }),
  billing_interval: IntBetween(1, 365).annotate({ description: "Units per period (1-365)." })
}

const billingLink = {
  billing_provider: Schema.optionalKey(Schema.NullOr(Model.BillingProvider).annotate({
    description: "The billing provider whose webhook events drive it (CONTRACT §20); null: none."
  })),
  external_id: Schema.optionalKey(Schema.NullOr(Schema.String).annotate({
    description: "Its subscription's id at that provider (one per provider: 409 `subscription_exists`)."
  }))
}

/** POST /subscriptions body. */
export const CreateSubscriptionBody = Schema.Struct({
  user_id: Id,
  ...planFields,
  amount: AmountInput,
  currency: Schema.String.annotate({ description: "ISO 4217 code, upper case (`USD`, `EUR`, `JPY`)." }),
  license_key: Schema.optionalKey(Schema.String.annotate({ description: "Binds this existing license; else one is created." })),
  license: Schema.optionalKey(CreateLicenseBody.annotate({ description: "Fields of the license to create (as POST /licenses)." })),
  generator_id: Schema.optionalKey(Id.annotate({ description: "Create the license with this generator." })),
  product_id: Schema.optionalKey(Schema.NullOr(Id)),
  payment_method: Schema.optionalKey(Schema.NullOr(ShortText)),
  trial_days: Schema.optionalKey(IntBetween(0, 3650).annotate({ description: "A trial of this many days first (status `trial`)." })),
  start_date: Schema.optionalKey(TimeInput.annotate({ description: "When the first period starts (default now; past or future)." })),
  end_date: Schema.optionalKey(Schema.NullOr(TimeInput).annotate({ description: "When the subscription ends as `expired`." })),
  items: Schema.optionalKey(Schema.Array(ItemInput)),
  ...billingLink
})

/** PUT /subscriptions/{id} body. */
export const UpdateSubscriptionBody = Schema.Struct({
  billing_period: Schema.optionalKey(planFields.billing_period),
  billing_interval: Schema.optionalKey(planFields.billing_interval),
  amount: Schema.optionalKey(AmountInput),
  payment_method: Schema.optionalKey(Schema.NullOr(ShortText)),
  next_payment_at: Schema.optionalKey(Schema.NullOr(TimeInput)),
  end_date: Schema.optionalKey(Schema.NullOr(TimeInput)),
  items: Schema.optionalKey(Schema.Array(ItemInput)),
  ...billingLink
})

/** POST /subscriptions/{id}/cancel body. */
export const CancelBody = Schema.Struct({
  at_period_end: Schema.optionalKey(Schema.Boolean.annotate({ description: "true: `pending-cancel` until the period end; default false: cancelled now." }))
})

/** POST /subscriptions/{id}/renew body. */
export const RenewSubscriptionBody = Schema.Struct({
  transaction_id: Schema.optionalKey(Schema.NullOr(ShortText).annotate({ description: "The payment's id at the payment provider, kept on the renewal record." }))
})

/** POST /subscriptions/{id}/switch body. */
export const SwitchBody = Schema.Struct({
  amount: AmountInput,
  billing_period: Schema.optionalKey(planFields.billing_period),
  billing_interval: Schema.optionalKey(planFields.billing_interval),
  product_id: Schema.optionalKey(Schema.NullOr(Id)),
  max_activations: Schema.optionalKey(Schema.NullOr(IntBetween(0, MAX_ACTIVATIONS)).annotate({
    description: "The license's new seat limit; seats above it keep working, new activations are refused."
  }))
})

/** GET /subscriptions query. */
export const ListSubscriptionsQuery = {
  status: Schema.optionalKey(Model.SubscriptionStatus),
  user_id: Schema.optionalKey(positiveIntFromString("Only subscriptions of this user.")),
  product_id: Schema.optionalKey(positiveIntFromString("Only subscriptions of this product.")),
  ...PageQuery
}

/** A subscription with its license (GET one and every write). */
export const SubscriptionDetailWire = Schema.Struct({ ...SubscriptionWire.fields, license: LicenseWire })

const action = (name: "pause" | "resume", summary: string, description: string) =>
  HttpApiEndpoint.post(name, `/subscriptions/:id/${name}`, {
    params: idParam,
    payload: NoFields,
    success: Success(SubscriptionDetailWire),
    error: [NotFound, Conflict]
  }).annotateMerge(OpenApi.annotations({ summary, description }))

/** The subscription routes. */
export class SubscriptionsGroup extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.get("list", "/subscriptions", {
      query: ListSubscriptionsQuery,
      success: Success(Schema.Struct({ subscriptions: Schema.Array(SubscriptionWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({ summary: "List subscriptions", description: "Oldest first; filters combine with AND; paging as for every list." })),
    HttpApiEndpoint.post("create", "/subscriptions", {
      payload: CreateSubscriptionBody,
      success: Success(SubscriptionDetailWire).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Create a subscription",
      description: "201 with the subscription and its license. Status `trial` with `trial_days`, else `active` (its " +
        "first period paid at signup). The license follows it: it expires at the current period end, `on-hold` " +
        "suspends it, `cancelled`/`expired` end it at once. `license_key` binds an existing license (404 " +
        "`license_not_found`; one bound to a live subscription: 400)."
    })),
    HttpApiEndpoint.get("get", "/subscriptions/:id", {
      params: idParam,
      success: Success(SubscriptionDetailWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a subscription with its license", description: "Unknown id: 404 `subscription_not_found`." })),
    HttpApiEndpoint.put("update", "/subscriptions/:id", {
      params: idParam,
      payload: UpdateSubscriptionBody,
      success: Success(SubscriptionDetailWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Change a subscription",
      description: "Only the fields sent change; a new period length applies from the next period. Cancelled or " +
        "expired: 409 `invalid_transition`."
    })),
    action("pause", "Pause", "active or trial → on-hold (the license is suspended). Else 409 `invalid_transition`."),
    action("resume", "Resume", "on-hold → active (the subscription's own suspension of the license is lifted, never an administrator's); pending-cancel → active, undoing the cancel."),
    HttpApiEndpoint.post("cancel", "/subscriptions/:id/cancel", {
      params: idParam,
      payload: CancelBody,
      success: Success(SubscriptionDetailWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Cancel",
      description: "Now (`cancelled`, the license ends at once) or with `at_period_end: true` (`pending-cancel`, " +
        "`cancelled` at the period end)."
    })),
    HttpApiEndpoint.post("renew", "/subscriptions/:id/renew", {
      params: idParam,
      payload: RenewSubscriptionBody,
      success: Success(SubscriptionDetailWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Renew (record a payment)",
      description: "Records a paid renewal now and extends the current period end by one period from its end (not " +
        "from now): `early_renewal` before the payment is due, `renewal` after. From on-hold it also reactivates."
    })),
    HttpApiEndpoint.post("switch", "/subscriptions/:id/switch", {
      params: idParam,
      payload: SwitchBody,
      success: Success(SubscriptionDetailWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Switch plan",
      description: "Prorated on seconds: credit = old amount × unused fraction of the period, charge = new amount × " +
        "the same fraction, net = charge − credit (negative is a credit); a new period length starts a new period " +
        "now with net = new amount − credit. Half-even rounding in minor units. Recorded as a `switch` renewal."
    })),
    HttpApiEndpoint.get("renewals", "/subscriptions/:id/renewals", {
      params: idParam,
      query: PageQuery,
      success: Success(Schema.Struct({ renewals: Schema.Array(RenewalWire) }), ListMeta),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Renewal history", description: "Signup, renewals, early renewals and switches, oldest first." }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Subscriptions", description: "Recurring billing bound to licenses (API key required)." }))
{}
