/** Machine management (CONTRACT §6): list a license's machines, get one, deactivate (admin) and revoke. */
import { Clock, Context, Effect, Layer } from "effect"
import type { InvalidParam, StorageUnavailable } from "../shared/errors.js"
import { EventOutbox, type Page, Store } from "../shared/ports.js"
import { type LicenseNotFound, licenseNotFound, machineNotFound, type MachineNotFound } from "./errors.js"
import { parseKey } from "./keys.js"
import { deactivateMachine, type MachineChange, revokeMachine } from "./machine.js"
import type { License, Machine, MachineStatus } from "./model.js"
import { LicenseRepository, MachineRepository } from "./ports.js"

export class Machines extends Context.Service<Machines, {
  readonly listForLicense: (
    key: string,
    query: { readonly status?: MachineStatus | undefined; readonly page: number; readonly perPage: number }
  ) => Effect.Effect<Page<Machine>, InvalidParam | LicenseNotFound | StorageUnavailable>
  readonly get: (id: number) => Effect.Effect<Machine, MachineNotFound | StorageUnavailable>
  /** Deactivates a machine (reason `admin`) and frees its seat. */
  readonly deactivate: (id: number) => Effect.Effect<Machine, MachineNotFound | StorageUnavailable>
  /** Revokes a machine: seat freed, fingerprint barred from the license, listed on the CRL. */
  readonly revoke: (id: number) => Effect.Effect<Machine, MachineNotFound | StorageUnavailable>
}>()("@lm/domain/Machines") {
  static readonly layer = Layer.effect(
    Machines,
    Effect.gen(function*() {
      const store = yield* Store
      const machines = yield* MachineRepository
      const licenses = yield* LicenseRepository
      const outbox = yield* EventOutbox

      const listForLicense = Effect.fn("Machines.listForLicense")(function*(
        key: string,
        query: { readonly status?: MachineStatus | undefined; readonly page: number; readonly perPage: number }
      ) {
        const normalized = yield* Effect.fromResult(parseKey(key))
        const license = yield* licenses.findByKey(normalized)
        if (license === undefined) return yield* licenseNotFound()
        return yield* machines.list(license.id, query)
      })

      const get = Effect.fn("Machines.get")(function*(id: number) {
        const machine = yield* machines.findById(id)
        if (machine === undefined) return yield* machineNotFound()
        return machine
      })

      const change = (apply: (license: License, machine: Machine, now: number) => MachineChange) =>
        Effect.fnUntraced(function*(id: number) {
          return yield* store.transaction(
            Effect.gen(function*() {
              const found = yield* machines.findById(id)
              if (found === undefined) return yield* machineNotFound()
              const license = yield* licenses.lockById(found.licenseId)
              // Re-read under the license lock: another transaction may have changed it meanwhile.
              const machine = yield* machines.findById(id)
              if (license === undefined || machine === undefined) return yield* machineNotFound()
              const now = yield* Clock.currentTimeMillis
              const result = apply(license, machine, now)
              if (!result.changed) return machine
              const saved = yield* machines.update(result.machine)
              yield* outbox.append(result.events)
              return saved
            })
          )
        })

      return Machines.of({
        listForLicense,
        get,
        deactivate: change((license, machine, now) => deactivateMachine(license, machine, "admin", now)),
        revoke: change(revokeMachine)
      })
    })
  )
}
