/**
 * Handlers of the `machines` group: each calls one method of the domain's `Machines` service and writes the
 * result with `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { Machines } from "@lm/domain"
import { Api, ok } from "@lm/api"
import { listMeta, machineToWire, pageRequest } from "@lm/api/wire"
import { group } from "./Group.js"

/** The `machines` handlers, on the domain's `Machines` service. */
export const MachinesHandlers = group(Api, "machines", (handlers) =>
  Effect.gen(function*() {
    const machines = yield* Machines
    return handlers.handleAll({
      listForLicense: ({ params, query }) => {
        const page = pageRequest(query)
        return machines.listForLicense(params.key, { status: query.status, ...page }).pipe(
          Effect.map((result) =>
            ok({ machines: result.items.map(machineToWire) }, listMeta(result.total, page.page, page.perPage))
          )
        )
      },
      get: ({ params }) =>
        machines.get(params.id).pipe(Effect.map((machine) => ok(machineToWire(machine)))),
      deactivate: ({ params }) =>
        machines.deactivate(params.id).pipe(
          Effect.map((machine) => ok({ deactivated: true as const, machine: machineToWire(machine) }))
        ),
      revoke: ({ params }) =>
        machines.revoke(params.id).pipe(
          Effect.map((machine) => ok({ revoked: true as const, machine: machineToWire(machine) }))
        )
    })
  }))
