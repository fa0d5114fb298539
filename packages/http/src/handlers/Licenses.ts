/**
 * Handlers of the `licenses` group: each decodes its request, calls one method of the domain's `Licenses`
 * service and writes the result with `Wire.ts`. Domain errors map to the envelope mechanically (`Group.ts`).
 */
import { Effect, Option, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { type Importing, License, Licenses, type Model } from "@lm/domain"
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

/** Licenses read per page while an export streams: memory stays flat whatever the number of licenses. */
const EXPORT_PAGE = 1000

/** The License fields a CSV export has, in order: the scalar ones (`POST /licenses/import` reads them back). */
const csvColumns = [
  "id", "license_key", "status", "product_id", "order_id", "user_id", "max_activations", "activation_count",
  "overage_strategy", "is_floating", "lease_duration", "require_heartbeat", "heartbeat_interval", "valid_for_days",
  "expires_at", "grace_days", "activated_at", "source", "generator_id", "subscription_id", "policy_id", "created_at",
  "updated_at"
] as const

/** A CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break; null is empty. */
const csvCell = (value: unknown): string => {
  const text = value === null || value === undefined ? "" : String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
}

/**
 * The streamed answer of GET /licenses/export (CONTRACT §17): NDJSON lines are License objects with their
 * `machines` (as GET /licenses/{key} answers), so `format: lm` imports licenses and machines back; CSV rows are
 * the scalar License fields. The first page is read before the answer starts, so a bad filter is a 400 in the
 * envelope; the others as the client reads (a store failure then cuts the body short).
 */
const exportResponse = (
  licenses: Licenses["Service"],
  query: { readonly format?: Importing.ExportFormat } & Record<string, unknown>
) => {
  const csv = query.format === "csv"
  // Keyset paging without a count: each page starts after the last id of the one before, so every page costs the same.
  const readPage = (idAfter: number) =>
    Effect.map(
      licenses.exportPage({
        status: query.status as Model.LicenseStatus | undefined,
        productId: query.product_id as number | undefined,
        orderId: query.order_id as number | undefined,
        userId: query.user_id as number | undefined,
        generatorId: query.generator_id as number | undefined,
        search: query.search as string | undefined,
        expiresBefore: query.expires_before as number | undefined,
        expiresAfter: query.expires_after as number | undefined,
        idAfter,
        limit: EXPORT_PAGE
      }),
      (details) => [
        details.map((detail) => {
          if (!csv) return `${JSON.stringify(licenseDetailToWire(detail))}\n`
          const wire = licenseToWire(detail)
          return `${csvColumns.map((column) => csvCell(wire[column])).join(",")}\n`
        }),
        details.length < EXPORT_PAGE ? Option.none<number>() : Option.some(details.at(-1)!.license.id)
      ] as const
    )
  return Effect.map(readPage(0), ([first, next]) => {
    const rest = Option.match(next, {
      onNone: () => Stream.empty,
      onSome: (after) => Stream.paginate(after, readPage).pipe(Stream.orDie)
    })
    const lines = Stream.concat(Stream.fromIterable(csv ? [`${csvColumns.join(",")}\n`, ...first] : first), rest)
    return HttpServerResponse.stream(Stream.encodeText(lines), {
      contentType: csv ? "text/csv; charset=utf-8" : "application/x-ndjson",
      headers: { "content-disposition": `attachment; filename="licenses.${csv ? "csv" : "ndjson"}"` }
    })
  })
}

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
      export: ({ query }) => exportResponse(licenses, query),
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
