/**
 * The sweep (CONTRACT §7): deactivates machines whose floating lease ran out (`lease_expired`) or whose
 * heartbeat died (`heartbeat_dead`), and emits their events. Seat checks never wait for it: `holdsSeat`
 * already ignores such machines. Machines are claimed with skip-locked semantics, so several processes may
 * sweep at once and exactly one of them sweeps a given machine.
 */
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { logRoundFailure } from "../shared/background.js"
import type { StorageUnavailable } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { EventOutbox, Store } from "../shared/ports.js"
import { deactivateMachine, seatDeadline, sweepReason } from "./machine.js"
import type { License } from "./model.js"
import { LicenseRepository, MachineRepository } from "./ports.js"

/** Machines claimed per transaction. */
const BATCH = 200

export class Sweeper extends Context.Service<Sweeper, {
  /** Sweeps every machine due now; returns how many were deactivated. */
  readonly sweepOnce: Effect.Effect<number, StorageUnavailable>
}>()("@lm/domain/Sweeper") {
  static readonly layer = Layer.effect(
    Sweeper,
    Effect.gen(function*() {
      const store = yield* Store
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const outbox = yield* EventOutbox

      /** One batch in one transaction: returns [claimed, deactivated]. */
      const sweepBatch = store.transaction(
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* machines.claimExpired(now, BATCH)
          const byLicense = new Map<number, License | undefined>()
          const events: Array<DomainEvent> = []
          let deactivated = 0
          for (const machine of claimed) {
            if (!byLicense.has(machine.licenseId)) byLicense.set(machine.licenseId, yield* licenses.findById(machine.licenseId))
            const license = byLicense.get(machine.licenseId)
            if (license === undefined) continue
            const reason = sweepReason(machine, license, now)
            if (reason === null) {
              // The stored deadline was stale (the license's seat rules changed): store the true one.
              yield* machines.update({ ...machine, seatDeadline: seatDeadline(machine, license) })
              continue
            }
            const change = deactivateMachine(license, machine, reason, now)
            yield* machines.update(change.machine)
            events.push(...change.events)
            deactivated++
          }
          if (events.length > 0) yield* outbox.append(events)
          return [claimed.length, deactivated] as const
        })
      )

      const sweepOnce = Effect.gen(function*() {
        let total = 0
        while (true) {
          const [claimed, deactivated] = yield* sweepBatch
          total += deactivated
          if (claimed < BATCH) return total
        }
      }).pipe(Effect.withSpan("Sweeper.sweepOnce"))

      return Sweeper.of({ sweepOnce })
    })
  )

  /** Runs the sweep in the background every `interval` for as long as the layer lives; failures are logged. */
  static readonly layerBackground = (interval: Duration.Input) =>
    Layer.effectDiscard(
      Effect.gen(function*() {
        const sweeper = yield* Sweeper
        yield* sweeper.sweepOnce.pipe(
          Effect.tap((n) => (n > 0 ? Effect.logInfo(`sweep deactivated ${n} machine(s)`) : Effect.void)),
          Effect.catchCause(logRoundFailure("sweep failed")),
          Effect.repeat(Schedule.spaced(interval)),
          Effect.forkScoped
        )
      })
    )
}
