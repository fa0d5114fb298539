/**
 * Handlers of the `licenses` group: each decodes its request, calls one method of the domain's `Licenses`
 * service and writes the result with `Wire.ts`. Domain errors map to the envelope mechanically (`Group.ts`).
 */
import { Effect } from "effect"
import { License, Licenses } from "@lm/domain"
import { Api, ok } from "@lm/api"
import { licenseDetailToWire, licenseSettingsFromWire, licenseToWire, listMeta, pageRequest } from "@lm/api/wire"
import { group } from "./Group.js"

/** What a renew body asks for. */
const renewalOf = (body: { readonly expires_at?: number; readonly days?: number }): License.Renewal =>
  body.expires_at !== undefined
    ? { _tag: "Until", expiresAt: body.expires_at }
    : body.days !== undefined
    ? { _tag: "ExtendDays", days: body.days }
    : { _tag: "ResetRelative" }

/** The `licenses` handlers, on the domain's `Licenses` service. */
export const LicensesHandlers = group(Api, "licenses", (handlers) =>
  Effect.gen(function*() {
    const licenses = yield* Licenses
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return licenses.list({
          status: query.status,
          productId: query.product_id,
          orderId: query.order_id,
          userId: query.user_id,
          generatorId: query.generator_id,
          search: query.search,
          expiresBefore: query.expires_before,
          expiresAfter: query.expires_after,
          orderBy: query.orderby,
          order: query.order,
          ...page
        }).pipe(
          Effect.map((result) =>
            ok({ licenses: result.items.map(licenseToWire) }, listMeta(result.total, page.page, page.perPage))
          )
        )
      },
      create: ({ payload }) =>
        licenses.create({
          ...licenseSettingsFromWire(payload),
          licenseKey: payload.license_key ?? undefined,
          generatorId: payload.generator_id ?? undefined
        }).pipe(Effect.map((view) => ok(licenseToWire(view)))),
      import: ({ payload }) => licenses.importLicenses(payload.format, payload.data).pipe(Effect.map((result) => ok(result))),
      get: ({ params }) =>
        licenses.get(params.key).pipe(Effect.map((detail) => ok(licenseDetailToWire(detail)))),
      update: ({ params, payload }) =>
        licenses.update(params.key, licenseSettingsFromWire(payload)).pipe(
          Effect.map((view) => ok(licenseToWire(view)))
        ),
      delete: ({ params }) =>
        licenses.delete(params.key).pipe(
          Effect.map(({ id }) => ok({ deleted: true as const, id }))
        ),
      renew: ({ params, payload }) =>
        licenses.renew(params.key, renewalOf(payload)).pipe(
          Effect.map((view) => ok(licenseToWire(view)))
        ),
      suspend: ({ params }) =>
        licenses.suspend(params.key).pipe(Effect.map((view) => ok(licenseToWire(view)))),
      revoke: ({ params }) =>
        licenses.revoke(params.key).pipe(Effect.map((view) => ok(licenseToWire(view)))),
      reinstate: ({ params }) =>
        licenses.reinstate(params.key).pipe(Effect.map((view) => ok(licenseToWire(view)))),
      terminate: ({ params, payload }) =>
        licenses.terminate(params.key, payload.confirm === true).pipe(
          Effect.map((view) => ok(licenseToWire(view)))
        )
    })
  }))
