/**
 * Handlers of the `policies` group: each calls one method of the domain's `Policies` service and writes the
 * result with `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { License, Policies, type Services } from "@lm/domain"
import { Api, ok } from "@lm/api"
import type { UpdatePolicyBody } from "@lm/api"
import { listMeta, pageRequest, policyToWire } from "@lm/api/wire"
import { group } from "./Group.js"

type PolicyBody = typeof UpdatePolicyBody.Type

/** A null setting is its License default (a null `product_id` or `max_activations`/`valid_for_days` is null). */
const orDefault = <K extends keyof typeof License.defaultLicenseSettings>(value: (typeof License.defaultLicenseSettings)[K] | null | undefined, name: K) =>
  value === null ? License.defaultLicenseSettings[name] : value

/** A policy body in the domain's terms; a missing field stays undefined (unchanged on PUT, default on POST). */
const policyInput = (body: PolicyBody): Services.PolicyInput => ({
  name: body.name,
  productId: body.product_id,
  entitlements: body.entitlements === null ? [] : body.entitlements,
  maxActivations: body.max_activations,
  overageStrategy: orDefault(body.overage_strategy, "overageStrategy"),
  isFloating: orDefault(body.is_floating, "isFloating"),
  leaseDuration: orDefault(body.lease_duration, "leaseDuration"),
  requireHeartbeat: orDefault(body.require_heartbeat, "requireHeartbeat"),
  heartbeatInterval: orDefault(body.heartbeat_interval, "heartbeatInterval"),
  validForDays: body.valid_for_days,
  graceDays: orDefault(body.grace_days, "graceDays")
})

/** The `policies` handlers, on the domain's `Policies` service. */
export const PoliciesHandlers = group(Api, "policies", (handlers) =>
  Effect.gen(function*() {
    const policies = yield* Policies
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return policies.list({ ...page, productId: query.product_id }).pipe(
          Effect.map((result) => ok({ policies: result.items.map(policyToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      },
      create: ({ payload }) => policies.create(policyInput(payload)).pipe(Effect.map((view) => ok(policyToWire(view)))),
      get: ({ params }) => policies.get(params.id).pipe(Effect.map((view) => ok(policyToWire(view)))),
      update: ({ params, payload }) => policies.update(params.id, policyInput(payload)).pipe(Effect.map((view) => ok(policyToWire(view)))),
      delete: ({ params }) => policies.delete(params.id).pipe(Effect.map((result) => ok({ deleted: true as const, id: result.id }))),
      apply: ({ params }) => policies.apply(params.id).pipe(Effect.map((result) => ok({ updated: result.updated })))
    })
  }))
