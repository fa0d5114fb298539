/**
 * Handlers of the `analytics` group: each calls one method of the domain's `Analytics` service and writes the
 * result in the wire's names. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { Services } from "@lm/domain"
import { AnomalyWire, Api, ok } from "@lm/api"
import { iso, licenseToWire } from "@lm/api/wire"
import { group } from "./Group.js"

/** The `analytics` handlers, on the domain's `Analytics` service. */
export const AnalyticsHandlers = group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const analytics = yield* Services.Analytics
    return handlers.handleAll({
      overview: ({ query }) =>
        analytics.overview(query.period ?? "30d").pipe(
          Effect.map((o) =>
            ok({
              licenses: { total: o.licenses.total, by_status: o.licenses.byStatus },
              seats: { active_machines: o.seats.activeMachines, total_seats: o.seats.totalSeats, utilization: o.seats.utilization },
              validations: o.validations,
              activations: o.activations,
              subscriptions: { by_status: o.subscriptions.byStatus, mrr: o.subscriptions.mrr },
              expiring: { in_7_days: o.expiring.in7Days, in_30_days: o.expiring.in30Days },
              app_versions: o.appVersions.map((v) => ({ app_version: v.appVersion, machines: v.machines })),
              top_licenses: o.topLicenses.map((t) => ({ license_key: t.licenseKey, validations: t.validations }))
            })
          )
        ),
      validations: ({ query }) =>
        analytics.validations({
          from: query.from,
          to: query.to,
          interval: query.interval,
          licenseKey: query.license_key,
          productId: query.product_id
        }).pipe(
          Effect.map((s) =>
            ok({
              series: s.series.map((p) => ({ t: iso(p.t), total: p.total, valid: p.valid, invalid: p.invalid })),
              interval: s.interval,
              from: iso(s.from),
              to: iso(s.to)
            })
          )
        ),
      anomalies: () =>
        analytics.anomalies.pipe(
          Effect.map((list) =>
            ok({ anomalies: list.map((a) => AnomalyWire.from(a)) })
          )
        ),
      expiring: ({ query }) =>
        analytics.expiring(query.days ?? 30).pipe(
          Effect.map((licenses) => ok({ licenses: licenses.map(licenseToWire) }))
        )
    })
  }))
