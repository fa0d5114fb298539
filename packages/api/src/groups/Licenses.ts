/**
 * The `licenses` routes of the lm/v1 API (CONTRACT §3): CRUD on licenses by key and the actions renew, suspend,
 * revoke, reinstate and terminate. Management routes: HTTP Basic API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Importing, License, Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { BulkBody } from "../middleware/ErrorEnvelope.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { Conflict, NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import {
  Id,
  IntBetween,
  LicenseDetailWire,
  LicenseSettingsInput,
  LicenseWire,
  ListMeta,
  MAX_DAYS,
  PageQuery,
  positiveIntFromString,
  timeInput,
  TimeInput
} from "../wire/Wire.js"

/** A license key in a path: trimmed and upper-cased before it is matched; a malformed key is 400. */
const keyParam = {
  key: Schema.String.annotate({
    description: "The license key (four dash-separated groups of A-Z0-9); trimmed and upper-cased before matching."
  })
}

/** `status` is refused on PUT with a message that says why. */
const statusNotWritable = Schema.optionalKey(
  Schema.Never.annotate({
    message: "is not writable; use the suspend, revoke, reinstate and terminate actions",
    description: "Not writable: status changes only through the actions."
  })
)

/** POST /licenses body. */
export const CreateLicenseBody = Schema.Struct({
  license_key: Schema.optionalKey(Schema.NullOr(Schema.String).annotate({
    description: "The key to issue (trimmed and upper-cased). Leave out (or null) to mint one."
  })),
  generator_id: Schema.optionalKey(Schema.NullOr(Id).annotate({
    description: "Draw the oldest pending key of this generator's pool, else mint one with it."
  })),
  ...LicenseSettingsInput
})

/** PUT /licenses/{key} body: the writable settings; `status` is refused. */
export const UpdateLicenseBody = Schema.Struct({ ...LicenseSettingsInput, status: statusNotWritable })

/** POST /licenses/{key}/renew body: `expires_at`, or `days`, or neither. */
export const RenewBody = Schema.Struct({
  expires_at: Schema.optionalKey(TimeInput),
  days: Schema.optionalKey(IntBetween(1, MAX_DAYS).annotate({
    description: "Extend by this many days from the later of now and the current expiry."
  }))
}).check(Schema.makeFilter((body) =>
  body.expires_at !== undefined && body.days !== undefined
    ? { path: ["days"], issue: "send either expires_at or days, not both" }
    : undefined
))

/** POST /licenses/{key}/terminate body. */
export const TerminateBody = Schema.Struct({
  confirm: Schema.optionalKey(Schema.Boolean.annotate({ description: "Must be true: terminating is irreversible." }))
})

/** POST /licenses/import body (CONTRACT §17). */
export const ImportLicensesBody = Schema.Struct({
  format: Schema.Literals(Importing.importFormats).annotate({
    description: "`lm` (this API's License objects), `wplm` (the same with integer statuses), `lmfwc` (License Manager " +
      "for WooCommerce), `dlm` (Digital License Manager), `csv` (a header line of License field names)."
  }),
  data: Schema.Unknown.annotate({ description: "An array of licenses, or for `csv` the CSV text." })
})

/** The body of an action that takes no fields: `{}` or none at all; any field is refused. */
export const NoFields = Schema.Record(Schema.String, Schema.Never.annotate({ message: "is not allowed" }))
  .annotate({ description: "No fields: send `{}` or no body." })

/** GET /licenses query. */
export const ListLicensesQuery = {
  status: Schema.optionalKey(
    Model.LicenseStatus.annotate({
      description: "The status as reported now (`active`, `inactive` and `expired` are derived)."
    })
  ),
  product_id: Schema.optionalKey(positiveIntFromString("Only licenses of this product.")),
  order_id: Schema.optionalKey(positiveIntFromString("Only licenses of this order.")),
  user_id: Schema.optionalKey(positiveIntFromString("Only licenses of this user.")),
  generator_id: Schema.optionalKey(positiveIntFromString("Only licenses made by this generator (pool keys included).")),
  search: Schema.optionalKey(Schema.String.annotate({ description: "Key prefix (trimmed and upper-cased)." })),
  expires_before: Schema.optionalKey(timeInput("Only licenses whose expires_at is strictly before this ISO 8601 time (with an offset).")),
  expires_after: Schema.optionalKey(timeInput("Only licenses whose expires_at is strictly after this ISO 8601 time (with an offset).")),
  orderby: Schema.optionalKey(Schema.Literals(Model.licenseSortColumns).annotate({
    description: "Sort column (default `id`); ties are broken by id in the same direction."
  })),
  order: Schema.optionalKey(Schema.Literals(Model.sortDirections).annotate({ description: "Sort direction (default `desc`)." })),
  ...PageQuery
}

/** `{licenses}` + list meta. */
export const LicenseList = Success(Schema.Struct({ licenses: Schema.Array(LicenseWire) }), ListMeta)

const action = (name: Exclude<License.LicenseAction, "terminate">, summary: string, description: string) =>
  HttpApiEndpoint.post(name, `/licenses/:key/${name}`, {
    params: keyParam,
    payload: NoFields,
    success: Success(LicenseWire),
    error: [NotFound, Conflict]
  }).annotateMerge(OpenApi.annotations({ summary, description }))

/** The license routes. */
export class LicensesGroup extends HttpApiGroup.make("licenses")
  .add(
    HttpApiEndpoint.get("list", "/licenses", {
      query: ListLicensesQuery,
      success: LicenseList
    }).annotateMerge(OpenApi.annotations({
      summary: "List licenses",
      description: "Filters combine with AND. `expires_before`/`expires_after` are strict bounds and never match a " +
        "perpetual license. Order: `orderby` (`id`, `created_at`, `expires_at`) and `order` (default `id desc`); " +
        "with `expires_at`, perpetual licenses sort as the latest. Paging: `page` and `per_page` at least 1 (else " +
        "400), `per_page` above 100 is read as 100, `total_pages` is 0 when nothing matches."
    })),
    HttpApiEndpoint.post("create", "/licenses", {
      payload: CreateLicenseBody,
      success: Success(LicenseWire).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Create a license",
      description: "201 with the new license (status `inactive`). `license_key` and `generator_id` together: 400. " +
        "With `generator_id`, the generator's defaults apply under the body's fields; an unknown generator is 404 " +
        "`generator_not_found`. A key already in use: 409 `license_exists`. A null setting is null (or its default), " +
        "overriding a generator's default. Unknown fields: 400."
    })),
    HttpApiEndpoint.post("import", "/licenses/import", {
      payload: ImportLicensesBody,
      success: Success(Schema.Struct({
        imported: Schema.Int.annotate({ description: "Licenses imported." }),
        machines: Schema.Int.annotate({ description: "Machines imported with them." })
      })).pipe(HttpApiSchema.status(201)),
      error: [Conflict]
    }).annotate(BulkBody, true).annotateMerge(OpenApi.annotations({
      summary: "Import licenses from another licensing system",
      description: "Up to 10,000 licenses with their machines, all or nothing: 201 `{imported, machines}`, or 400 " +
        "naming each bad row (`data[3].expires_at`, `data[3].machines[0].fingerprint`, a row whose active machines " +
        "exceed its seats), or 409 `license_exists` when a key is already stored. Machines: `lm` rows' `machines` " +
        "(as GET /licenses/{key} lists them; the NDJSON export reads back), `wplm` the same with integer statuses " +
        "or `registered_devices` / `registered_domains`, `lmfwc` and `dlm` rows' `activations`. Keys are kept as " +
        "they are (upper-cased; 2–8 dash-separated groups of 1–32 A-Z0-9, at most 128 characters), `source` is " +
        "`import`. The body may take up to the server's `LM_IMPORT_MAX_BODY_BYTES` (64 MiB by default; other " +
        "routes 1 MiB); over it, 413 `rest_payload_too_large`."
    })),
    HttpApiEndpoint.get("export", "/licenses/export", {
      query: {
        ...Object.fromEntries(Object.entries(ListLicensesQuery).filter(([name]) => !["page", "per_page", "orderby", "order"].includes(name))),
        format: Schema.optionalKey(Schema.Literals(Importing.exportFormats).annotate({ description: "`ndjson` (default) or `csv`." }))
      } as Omit<typeof ListLicensesQuery, "page" | "per_page" | "orderby" | "order"> & {
        readonly format: Schema.optionalKey<Schema.Literals<typeof Importing.exportFormats>>
      },
      success: Schema.String.annotate({ description: "The licenses as NDJSON (one License object a line) or CSV." })
    }).annotateMerge(OpenApi.annotations({
      summary: "Export licenses",
      description: "Every license matching the filters of GET /licenses, oldest first, streamed: NDJSON (one License " +
        "object a line with its `machines`, as GET /licenses/{key} answers, `application/x-ndjson`; " +
        "`POST /licenses/import` with `format: lm` reads licenses and machines back) or CSV (`text/csv`, a header line of License fields; " +
        "`POST /licenses/import` with `format: csv` reads it back)."
    })),
    HttpApiEndpoint.get("get", "/licenses/:key", {
      params: keyParam,
      success: Success(LicenseDetailWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Get a license with its machines",
      description: "`machines` lists the machines of the license in any status (active, inactive, revoked), oldest " +
        "first, up to 1000; page through GET /licenses/{key}/machines for more."
    })),
    HttpApiEndpoint.put("update", "/licenses/:key", {
      params: keyParam,
      payload: UpdateLicenseBody,
      success: Success(LicenseWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Update a license's settings",
      description: "Only the fields sent change. A null clears: `product_id`, `order_id`, `user_id`, " +
        "`max_activations` (unlimited), `valid_for_days` and `expires_at` (perpetual) become null; the other " +
        "settings return to their defaults (`overage_strategy` deny, `is_floating` false, `lease_duration` 600, " +
        "`require_heartbeat` false, `heartbeat_interval` 600, `grace_days` 0, `meta` {}). `status` is not " +
        "writable (400). A terminated license: 409 `license_terminated`. Lowering `max_activations` below the " +
        "current count keeps the machines; new activations are refused."
    })),
    HttpApiEndpoint.delete("delete", "/licenses/:key", {
      params: keyParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Delete a license and its machines",
      description: "Works in every status, terminated included."
    })),
    HttpApiEndpoint.post("renew", "/licenses/:key/renew", {
      params: keyParam,
      payload: RenewBody,
      success: Success(LicenseWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Renew a license",
      description: "`expires_at` sets the expiry (any time, past included); `days` (1-36500) extends from the later " +
        "of now and the current expiry (from now when perpetual); `{}` sets now + `valid_for_days` (400 when the " +
        "license has none). Both `expires_at` and `days`: 400. The status is not changed by renewing: a suspended " +
        "or revoked license stays so. A terminated license: 409 `license_terminated`."
    })),
    action(
      "suspend",
      "Suspend a license",
      "From `active`, `inactive` or `expired`; machines are kept. Repeating it is a no-op 200. From `revoked`: 409 " +
        "`invalid_transition`; terminated: 409 `license_terminated`."
    ),
    action(
      "revoke",
      "Revoke a license (reversible)",
      "From `active`, `inactive`, `expired` or `suspended`; machines are kept. Repeating it is a no-op 200. " +
        "Terminated: 409 `license_terminated`."
    ),
    action(
      "reinstate",
      "Reinstate a suspended or revoked license",
      "Back to the derived status (`active`, `inactive` or `expired`). From any other status, a repeat included: " +
        "409 `invalid_transition` with `data.from` and `data.action`; terminated: 409 `license_terminated`."
    ),
    HttpApiEndpoint.post("terminate", "/licenses/:key/terminate", {
      params: keyParam,
      payload: TerminateBody,
      success: Success(LicenseWire),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Terminate a license (irreversible)",
      description: "Needs `{\"confirm\": true}`, else 400 `confirmation_required`. Every active machine is " +
        "deactivated (reason `license_terminated`). Repeating it is a no-op 200."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Licenses", description: "License management (API key required)." }))
{}
