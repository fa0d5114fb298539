/**
 * Handlers of the `machines` group: each calls one method of the domain's `Machines` service and writes the
 * result with `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { Machines } from "@lm/domain"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { ok } from "@lm/api"
import { listMeta, machineToWire, pageRequest } from "@lm/api/wire"

/** The `machines` handlers, on the domain's `Machines` service. */
export const MachinesHandlers = HttpApiBuilder.group(Api, "machines", (handlers) =>
  Effect.gen(function*() {
    const machines = yield* Machines
    return handlers.handleAll({
      listForLicense: ({ params, query }) => {
        const page = pageRequest(query)
        return machines.listForLicense(params.key, { status: query.status, ...page }).pipe(
          Effect.map((result) =>
            ok({ machines: result.items.map(machineToWire) }, listMeta(result.total, page.page, page.perPage))
          ),
          Effect.mapError(ApiErrors.fromDomain)
        )
      },
      get: ({ params }) =>
        machines.get(params.id).pipe(Effect.map((machine) => ok(machineToWire(machine))), Effect.mapError(ApiErrors.fromDomain)),
      deactivate: ({ params }) =>
        machines.deactivate(params.id).pipe(
          Effect.map((machine) => ok({ deactivated: true as const, machine: machineToWire(machine) })),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      revoke: ({ params }) =>
        machines.revoke(params.id).pipe(
          Effect.map((machine) => ok({ revoked: true as const, machine: machineToWire(machine) })),
          Effect.mapError(ApiErrors.fromDomain)
        )
    })
  }))
