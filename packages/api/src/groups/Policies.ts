/**
 * The `policies` routes of the lm/v1 API (CONTRACT §15): CRUD on policies — the plans a vendor sells: license
 * settings and the entitlement codes they unlock — and `apply`, which copies a policy's settings into its
 * licenses. Management routes: HTTP Basic API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { Conflict, NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import {
  EntitlementCodes,
  Id,
  IntBetween,
  ListMeta,
  MAX_ACTIVATIONS,
  MAX_DAYS,
  MAX_DURATION_SECONDS,
  PageQuery,
  PolicyWire,
  positiveIntFromString
} from "../wire/Wire.js"
import { NoFields } from "./Licenses.js"

const idParam = { id: positiveIntFromString("The policy's id (a positive integer).") }

const MAX_POLICY_NAME = Model.MAX_POLICY_NAME

/** Fields of a policy that POST and PUT may set; a null setting is its License default. */
const policyFields = {
  name: Schema.String.check(
    Schema.isMinLength(1, { message: `must be 1 to ${MAX_POLICY_NAME} characters` }),
    Schema.isMaxLength(MAX_POLICY_NAME, { message: `must be 1 to ${MAX_POLICY_NAME} characters` })
  ).annotate({ description: `A name for people (required, 1-${MAX_POLICY_NAME} characters).` }),
  product_id: Schema.NullOr(Id),
  entitlements: Schema.NullOr(EntitlementCodes).annotate({
    description: "Codes the policy's licenses hold (at most 64; repeats dropped, sorted). Live: a change holds for " +
      "every license of the policy at once, on every server."
  }),
  max_activations: Schema.NullOr(IntBetween(0, MAX_ACTIVATIONS)),
  overage_strategy: Schema.NullOr(Model.OverageStrategy),
  is_floating: Schema.NullOr(Schema.Boolean),
  lease_duration: Schema.NullOr(IntBetween(1, MAX_DURATION_SECONDS)),
  require_heartbeat: Schema.NullOr(Schema.Boolean),
  heartbeat_interval: Schema.NullOr(IntBetween(1, MAX_DURATION_SECONDS)),
  valid_for_days: Schema.NullOr(IntBetween(1, MAX_DAYS)),
  grace_days: Schema.NullOr(IntBetween(0, MAX_DAYS))
}

const optional = <F extends Record<string, Schema.Top>>(fields: F) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Schema.optionalKey(v)])) as {
    readonly [K in keyof F]: Schema.optionalKey<F[K]>
  }

const { name, ...rest } = policyFields

/** POST /policies body: `name` required, the rest optional. */
export const CreatePolicyBody = Schema.Struct({ name, ...optional(rest) })

/** PUT /policies/{id} body: any field; `license_count` is read-only. */
export const UpdatePolicyBody = Schema.Struct(optional(policyFields))

/** GET /policies query: paging and `product_id`. */
export const PolicyListQuery = Schema.Struct({
  ...PageQuery,
  product_id: Schema.optionalKey(positiveIntFromString("Only the policies of this product."))
})

/** The policy routes. */
export class PoliciesGroup extends HttpApiGroup.make("policies")
  .add(
    HttpApiEndpoint.get("list", "/policies", {
      query: PolicyListQuery,
      success: Success(Schema.Struct({ policies: Schema.Array(PolicyWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List policies",
      description: "Oldest first; filter `product_id`. Paging as for every list."
    })),
    HttpApiEndpoint.post("create", "/policies", {
      payload: CreatePolicyBody,
      success: Success(PolicyWire).pipe(HttpApiSchema.status(201))
    }).annotateMerge(OpenApi.annotations({
      summary: "Create a policy",
      description: "201 with the policy (`license_count` 0). Settings left out (or null) take the License defaults."
    })),
    HttpApiEndpoint.get("get", "/policies/:id", {
      params: idParam,
      success: Success(PolicyWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a policy", description: "Unknown id: 404 `policy_not_found`." })),
    HttpApiEndpoint.put("update", "/policies/:id", {
      params: idParam,
      payload: UpdatePolicyBody,
      success: Success(PolicyWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Update a policy",
      description: "Only the fields sent change. Entitlements hold for every license of the policy at once; the " +
        "settings reach its licenses only through `apply` (or when a license is created with it or moved to it)."
    })),
    HttpApiEndpoint.delete("delete", "/policies/:id", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int })),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Delete a policy",
      description: "409 `policy_in_use` while a license refers to it (move those licenses first)."
    })),
    HttpApiEndpoint.post("apply", "/policies/:id/apply", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ updated: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Copy a policy's settings into its licenses",
      description: "In one transaction: every license of the policy (but terminated ones) gets the policy's settings " +
        "(and its product, when it names one); `updated` counts the licenses that changed (each a `license.updated` event)."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Policies", description: "Policies and entitlements (API key required)." }))
{}
