/**
 * The client calls (CONTRACT §4): validate, activate, deactivate, heartbeat. Activation, deactivation and
 * heartbeats run in a transaction holding the license's lock, so seat checks and writes are atomic on every
 * store and across processes; concurrent ones share transactions (group commit, `SeatBatches`). Every call and
 * every refusal goes to the event log.
 */
import { Clock, Context, Effect, Layer } from "effect"
import {
  type InvalidParam,
  type LicenseNotFound,
  licenseNotFound,
  type MachineInactive,
  type MachineLimitExceeded,
  type MachineNotFound,
  machineNotFound,
  type Refused,
  type StorageUnavailable
} from "../errors.js"
import { normalizeKey, parseKey } from "../keys.js"
import { licenseStatus } from "../license.js"
import { type Beat, countSeatsHeld, deactivateMachine, machineActivated, planActivation, recordHeartbeat } from "../machine.js"
import type { ActivityKind, License, LicenseStatus, Machine, MachineFacts } from "../model.js"
import { EventOutbox, LicenseRepository, MachineRepository, Store } from "../ports.js"
import { type Validation, validateLicense } from "../validation.js"
import { ActivityRecorder } from "./ActivityRecorder.js"
import { Blacklist } from "./Blacklist.js"
import { makeSeatBatches, RunAlone } from "./SeatBatches.js"

/** Who is calling: the client's address as the HTTP layer saw it. */
export interface ClientContext {
  readonly ipAddress: string | null
}

export interface ValidateInput extends ClientContext {
  readonly licenseKey: string
  readonly fingerprint?: string | null | undefined
  readonly appVersion?: string | null | undefined
}

export interface ValidateResult {
  readonly license: License
  readonly validation: Validation
  readonly now: number
}

export interface ActivateInput extends ClientContext {
  readonly licenseKey: string
  readonly facts: MachineFacts
}

export interface ActivateResult {
  readonly license: License
  readonly machine: Machine
  /** True when a seat was taken (201); false when the fingerprint already held one (200). */
  readonly created: boolean
  readonly now: number
}

export type DeactivateInput = ClientContext & { readonly licenseKey: string } & (
  | { readonly fingerprint: string; readonly machineId?: undefined }
  | { readonly machineId: number; readonly fingerprint?: undefined }
)

export interface DeactivateResult {
  readonly license: License
  readonly machine: Machine
}

export interface HeartbeatInput extends ClientContext {
  readonly licenseKey: string
  readonly fingerprint: string
  readonly appVersion?: string | undefined
}

export interface HeartbeatResult extends Beat {
  readonly license: License
  readonly now: number
}

/** A license as it reports itself now: its derived status and how many machines hold a seat. */
export interface LicenseView {
  readonly license: License
  readonly status: LicenseStatus
  readonly activationCount: number
}

/** The license a client call found, noted as soon as it is found (for the event log). */
interface Seen {
  licenseId: number | null
}

export class Licensing extends Context.Service<Licensing, {
  readonly validate: (input: ValidateInput) => Effect.Effect<ValidateResult, InvalidParam | LicenseNotFound | StorageUnavailable>
  readonly activate: (
    input: ActivateInput
  ) => Effect.Effect<ActivateResult, InvalidParam | LicenseNotFound | Refused | MachineLimitExceeded | StorageUnavailable>
  readonly deactivate: (
    input: DeactivateInput
  ) => Effect.Effect<DeactivateResult, InvalidParam | LicenseNotFound | MachineNotFound | StorageUnavailable>
  readonly heartbeat: (
    input: HeartbeatInput
  ) => Effect.Effect<HeartbeatResult, InvalidParam | LicenseNotFound | MachineNotFound | Refused | MachineInactive | StorageUnavailable>
}>()("@lm/domain/Licensing") {
  static readonly layer = Layer.effect(
    Licensing,
    Effect.gen(function*() {
      const store = yield* Store
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const outbox = yield* EventOutbox
      const recorder = yield* ActivityRecorder
      const batches = yield* makeSeatBatches

      /**
       * Records the outcome of a client call in the event log, success or refusal. `run` notes the license it
       * found in `seen`, so that a refusal is recorded against its license too (null when there is none).
       */
      const logged = <A, E extends { readonly code?: string }, R>(
        kind: ActivityKind,
        input: ClientContext & { readonly licenseKey: string; readonly fingerprint?: string | null | undefined; readonly appVersion?: string | null | undefined },
        run: (seen: Seen) => Effect.Effect<A, E, R>,
        describe: (a: A) => { readonly licenseId: number; readonly machineId: number | null; readonly result: string }
      ) => {
        const seen: Seen = { licenseId: null }
        return Effect.onExit(run(seen), (exit) =>
          Effect.flatMap(Clock.currentTimeMillis, (at) => {
            let licenseId: number | null = seen.licenseId
            let machineId: number | null = null
            let result = "error"
            if (exit._tag === "Success") {
              const d = describe(exit.value)
              licenseId = d.licenseId
              machineId = d.machineId
              result = d.result
            } else {
              const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
              const code = failure?._tag === "Fail" ? (failure.error as { readonly code?: string }).code : undefined
              result = code ?? "internal_error"
            }
            return recorder.record({
              kind,
              licenseId,
              licenseKey: normalizeKey(input.licenseKey),
              machineId,
              fingerprint: input.fingerprint ?? null,
              ipAddress: input.ipAddress,
              appVersion: input.appVersion ?? null,
              result,
              at
            })
          })
        )
      }

      const validate = Effect.fnUntraced(function*(input: ValidateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const license = yield* licenses.findByKey(key)
        if (license === undefined) return yield* licenseNotFound()
        seen.licenseId = license.id
        const fingerprint = input.fingerprint ?? null
        const list = yield* machines.listForValidation(license.id, fingerprint)
        const now = yield* Clock.currentTimeMillis
        const blacklist = yield* Blacklist
        const validation = validateLicense({
          license,
          machines: list,
          fingerprint,
          now,
          blacklisted: blacklist.isBlacklisted({ licenseKey: key, fingerprint, ipAddress: input.ipAddress })
        })
        return { license, validation, now }
      })

      const activate = Effect.fnUntraced(function*(input: ActivateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const blacklist = yield* Blacklist
        const blacklisted = blacklist.isBlacklisted({ licenseKey: key, fingerprint: input.facts.fingerprint, ipAddress: input.ipAddress })
        return yield* store.transaction(
          Effect.gen(function*() {
            const license = yield* store.lockLicense(key)
            if (license === undefined) return yield* licenseNotFound()
            seen.licenseId = license.id
            // One read under the lock: the active machines and the fingerprint's record in any status.
            const onLicense = yield* machines.listForValidation(license.id, input.facts.fingerprint)
            const existing = onLicense.find((m) => m.fingerprint === input.facts.fingerprint)
            const activeMachines = onLicense.filter((m) => m.status === "active")
            const now = yield* Clock.currentTimeMillis
            const facts = { ...input.facts, ipAddress: input.ipAddress }
            const plan = yield* Effect.fromResult(planActivation({ license, activeMachines, existing, facts, now, blacklisted }))
            if (plan._tag === "AlreadyActive") return { license, machine: plan.machine, created: false, now }
            if (plan.license !== license) yield* licenses.update(plan.license)
            const machine = plan._tag === "Insert"
              ? yield* machines.insert(plan.draft)
              : yield* machines.update(plan.machine, plan.components)
            yield* outbox.append([machineActivated(plan.license, machine, now)])
            return { license: plan.license, machine, created: true, now }
          })
        )
      })

      const deactivate = Effect.fnUntraced(function*(input: DeactivateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        return yield* store.transaction(
          Effect.gen(function*() {
            const license = yield* store.lockLicense(key)
            if (license === undefined) return yield* licenseNotFound()
            seen.licenseId = license.id
            const machine = input.fingerprint !== undefined
              ? yield* machines.findByFingerprint(license.id, input.fingerprint)
              : yield* machines.findById(input.machineId)
            if (machine === undefined || machine.licenseId !== license.id) return yield* machineNotFound()
            const now = yield* Clock.currentTimeMillis
            const change = deactivateMachine(license, machine, "client", now)
            if (!change.changed) return { license, machine }
            const saved = yield* machines.update(change.machine)
            yield* outbox.append(change.events)
            return { license, machine: saved }
          })
        )
      })

      const heartbeat = Effect.fnUntraced(function*(input: HeartbeatInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const blacklist = yield* Blacklist
        const blacklisted = blacklist.isBlacklisted({ licenseKey: key, fingerprint: input.fingerprint, ipAddress: input.ipAddress })
        return yield* store.transaction(
          Effect.gen(function*() {
            const license = yield* store.lockLicense(key)
            if (license === undefined) return yield* licenseNotFound()
            seen.licenseId = license.id
            const machine = yield* machines.findByFingerprint(license.id, input.fingerprint)
            if (machine === undefined) return yield* machineNotFound()
            const now = yield* Clock.currentTimeMillis
            const beat = yield* Effect.fromResult(recordHeartbeat({ license, machine, appVersion: input.appVersion, now, blacklisted }))
            const saved = yield* machines.update(beat.machine)
            return { ...beat, machine: saved, license, now }
          })
        )
      })

      // The batched forms (group commit, see SeatBatches): the calls that fit a batch wait for one; the others,
      // and every call of a batch whose transaction failed, run alone through the single-call paths above.
      const noteLicense = (seen: Seen) => (licenseId: number) => {
        seen.licenseId = licenseId
      }

      const activateBatched = Effect.fnUntraced(function*(input: ActivateInput, seen: Seen) {
        // Components need their own rows and statements: such activations run alone.
        if (input.facts.components !== undefined) return yield* activate(input, seen)
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const blacklist = yield* Blacklist
        const blacklisted = blacklist.isBlacklisted({ licenseKey: key, fingerprint: input.facts.fingerprint, ipAddress: input.ipAddress })
        const facts = { ...input.facts, ipAddress: input.ipAddress }
        const answer = yield* batches.submit({ _tag: "Activate", key, facts, blacklisted }, noteLicense(seen))
        return answer === RunAlone ? yield* activate(input, seen) : answer
      })

      const deactivateBatched = Effect.fnUntraced(function*(input: DeactivateInput, seen: Seen) {
        if (input.fingerprint === undefined) return yield* deactivate(input, seen)
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const answer = yield* batches.submit({ _tag: "Deactivate", key, fingerprint: input.fingerprint }, noteLicense(seen))
        return answer === RunAlone ? yield* deactivate(input, seen) : answer
      })

      const heartbeatBatched = Effect.fnUntraced(function*(input: HeartbeatInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const blacklist = yield* Blacklist
        const blacklisted = blacklist.isBlacklisted({ licenseKey: key, fingerprint: input.fingerprint, ipAddress: input.ipAddress })
        const answer = yield* batches.submit(
          { _tag: "Heartbeat", key, fingerprint: input.fingerprint, appVersion: input.appVersion, blacklisted },
          noteLicense(seen)
        )
        return answer === RunAlone ? yield* heartbeat(input, seen) : answer
      })

      return Licensing.of({
        validate: (input) =>
          logged("validate", input, (seen) => validate(input, seen), (r) => ({
            licenseId: r.license.id,
            machineId: r.validation.machine?.id ?? null,
            result: r.validation.code
          })),
        activate: (input) =>
          logged(
            "activate",
            { ...input, fingerprint: input.facts.fingerprint, appVersion: input.facts.appVersion },
            (seen) => activateBatched(input, seen),
            (r) => ({ licenseId: r.license.id, machineId: r.machine.id, result: r.created ? "activated" : "already_active" })
          ),
        deactivate: (input) =>
          logged("deactivate", input, (seen) => deactivateBatched(input, seen), (r) => ({ licenseId: r.license.id, machineId: r.machine.id, result: "deactivated" })),
        heartbeat: (input) =>
          logged("heartbeat", input, (seen) => heartbeatBatched(input, seen), (r) => ({ licenseId: r.license.id, machineId: r.machine.id, result: "ok" }))
      })
    })
  )
}

/** The license as it reports itself now, given its machines in `active` status. */
export const viewLicense = (license: License, activeMachines: ReadonlyArray<Machine>, now: number): LicenseView => {
  const activationCount = countSeatsHeld(activeMachines, license, now)
  return { license, status: licenseStatus(license, activationCount, now), activationCount }
}
