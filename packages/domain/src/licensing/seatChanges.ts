/**
 * Seat changes (CONTRACT §4): activations, deactivations and heartbeats decided by the pure core and applied in
 * order against the locked licenses and their machines. A call alone is a batch of one: the single-call path and
 * the group commit (`SeatBatches.ts`) both plan with {@link applySeatChanges} and differ only in how
 * they write the plan. Pure: the caller persists what it returns.
 */
import { Result } from "effect"
import type { DomainEvent } from "../shared/model.js"
import {
  type LicenseNotFound,
  licenseNotFound,
  type MachineInactive,
  type MachineLimitExceeded,
  machineNotFound,
  type MachineNotFound,
  type Refused
} from "./errors.js"
import { type Beat, deactivateMachine, machineActivated, planActivation, recordHeartbeat } from "./machine.js"
import type { ComponentDraft, License, Machine, MachineDraft, MachineFacts } from "./model.js"
import type { SeatChangeWrites } from "./ports.js"

export interface ActivateResult {
  readonly license: License
  readonly machine: Machine
  /** True when a seat was taken (201); false when the fingerprint already held one (200). */
  readonly created: boolean
  readonly now: number
}

export interface DeactivateResult {
  readonly license: License
  readonly machine: Machine
}

export interface HeartbeatResult extends Beat {
  readonly license: License
  readonly now: number
}

/** A seat change a client asked for; the key is already parsed, the blacklist already consulted. */
export type SeatChange =
  | {
    readonly _tag: "Activate"
    readonly key: string
    /** The client's facts, its address included. */
    readonly facts: MachineFacts
    readonly blacklisted: boolean
  }
  | (
    & { readonly _tag: "Deactivate"; readonly key: string }
    & (
      | { readonly fingerprint: string; readonly machineId?: undefined }
      | { readonly machineId: number; readonly fingerprint?: undefined }
    )
  )
  | {
    readonly _tag: "Heartbeat"
    readonly key: string
    readonly fingerprint: string
    readonly appVersion: string | undefined
    readonly blacklisted: boolean
  }

export type SeatChangeError = LicenseNotFound | MachineNotFound | Refused | MachineLimitExceeded | MachineInactive

/** The domain errors a seat change may answer, by kind. */
export type SeatChangeErrorOf<C extends SeatChange> = C extends { readonly _tag: "Activate" } ? LicenseNotFound | Refused | MachineLimitExceeded
  : C extends { readonly _tag: "Deactivate" } ? LicenseNotFound | MachineNotFound
  : LicenseNotFound | MachineNotFound | Refused | MachineInactive

/** What a seat change answers, by kind. */
export type SeatChangeResult<C extends SeatChange> = C extends { readonly _tag: "Activate" } ? ActivateResult
  : C extends { readonly _tag: "Deactivate" } ? DeactivateResult
  : HeartbeatResult

/** One call's answer. */
export type Answer = Result.Result<ActivateResult | DeactivateResult | HeartbeatResult, SeatChangeError>

/** The fingerprint a change names; undefined for a deactivation by machine id. */
export const fingerprintOf = (change: SeatChange): string | undefined =>
  change._tag === "Activate" ? change.facts.fingerprint : change.fingerprint

/** The machines as the store answered the writes, for the answers that carry them. */
export interface SavedMachines {
  /** The inserted machines, in draft order (with their ids). */
  readonly inserted: ReadonlyArray<Machine>
  /** The updated machines, in the order of `writes.updates`. */
  readonly updated: ReadonlyArray<Machine>
}

/** The writes of a group of seat changes and how to answer each call once they are written. */
export interface SeatChangePlan {
  /** Licenses a first activation changed, in their final state. */
  readonly licenses: ReadonlyArray<License>
  /** The machine writes and the events, in call order (`MachineRepository.writeSeatChanges`). */
  readonly writes: SeatChangeWrites
  /** For each of `writes.updates`, the components to put in place of the machine's, when the client sent them. */
  readonly components: ReadonlyArray<ReadonlyArray<ComponentDraft> | undefined>
  /** The answers, in call order. */
  readonly answers: (saved: SavedMachines) => ReadonlyArray<Answer>
}

type Success = ActivateResult | DeactivateResult | HeartbeatResult

/** What one call did: answered without a write, or answered with the machine row it wrote. */
type Step =
  | { readonly _tag: "Answered"; readonly answer: Answer }
  | { readonly _tag: "Wrote"; readonly row: "insert" | "update"; readonly index: number; readonly answer: (machine: Machine) => Success }

/** A license during a batch: its latest state, machines holding `active` status and records by fingerprint. */
interface LicenseInBatch {
  license: License
  readonly active: Map<string, Machine>
  readonly records: Map<string, Machine>
}

/** The record a change names on its license, by fingerprint or by id. */
const recordOf = (entry: LicenseInBatch, change: SeatChange): Machine | undefined => {
  if (change._tag === "Deactivate" && change.machineId !== undefined) {
    for (const machine of entry.records.values()) if (machine.id === change.machineId) return machine
    return undefined
  }
  return entry.records.get(fingerprintOf(change)!)
}

/**
 * Applies seat changes in order against the locked licenses and their machines (the licenses' machines in
 * `active` status and the record each change names; machines of other licenses are ignored), through the pure
 * core, carrying the state forward from call to call: a seat taken by the first call counts for the second.
 * At most one call per (license, machine).
 */
export const applySeatChanges = (
  changes: ReadonlyArray<SeatChange>,
  locked: ReadonlyArray<License>,
  machines: ReadonlyArray<Machine>,
  now: number
): SeatChangePlan => {
  const byKey = new Map<string, LicenseInBatch>()
  const byId = new Map<number, LicenseInBatch>()
  for (const license of locked) {
    const entry: LicenseInBatch = { license, active: new Map(), records: new Map() }
    byKey.set(license.key, entry)
    byId.set(license.id, entry)
  }
  for (const machine of machines) {
    const entry = byId.get(machine.licenseId)
    if (entry === undefined) continue
    entry.records.set(machine.fingerprint, machine)
    if (machine.status === "active") entry.active.set(machine.fingerprint, machine)
  }
  const changedLicenses = new Map<number, License>()
  const inserts: Array<MachineDraft> = []
  const updates: Array<Machine> = []
  const components: Array<ReadonlyArray<ComponentDraft> | undefined> = []
  const steps: Array<Step> = []
  const events: Array<{ readonly event: DomainEvent; readonly insertIndex?: number }> = []
  const answered = (answer: Answer) => steps.push({ _tag: "Answered", answer })
  /** Puts a machine's new state in place for the calls that follow. */
  const carry = (entry: LicenseInBatch, machine: Machine) => {
    entry.records.set(machine.fingerprint, machine)
    if (machine.status === "active") entry.active.set(machine.fingerprint, machine)
    else entry.active.delete(machine.fingerprint)
  }
  /** `carry`, and the machine's row is written; the call is answered with the machine as written. */
  const save = (
    entry: LicenseInBatch,
    machine: Machine,
    answer: (machine: Machine) => Success,
    emitted: ReadonlyArray<DomainEvent>,
    replacing?: ReadonlyArray<ComponentDraft>
  ) => {
    carry(entry, machine)
    steps.push({ _tag: "Wrote", row: "update", index: updates.length, answer })
    updates.push(machine)
    components.push(replacing)
    for (const event of emitted) events.push({ event })
  }

  for (const change of changes) {
    const entry = byKey.get(change.key)
    if (entry === undefined) {
      answered(Result.fail(licenseNotFound()))
      continue
    }
    const license = entry.license
    const existing = recordOf(entry, change)
    switch (change._tag) {
      case "Activate": {
        const plan = planActivation({
          license,
          activeMachines: [...entry.active.values()],
          existing,
          facts: change.facts,
          now,
          blacklisted: change.blacklisted
        })
        if (Result.isFailure(plan)) {
          answered(Result.fail(plan.failure))
          break
        }
        const planned = plan.success
        if (planned._tag === "AlreadyActive") {
          answered(Result.succeed({ license, machine: planned.machine, created: false, now }))
          break
        }
        if (planned.license !== license) {
          entry.license = planned.license
          changedLicenses.set(license.id, planned.license)
        }
        const activated = (machine: Machine): ActivateResult => ({ license: planned.license, machine, created: true, now })
        if (planned._tag === "Insert") {
          // Counts for the seat checks that follow; its id comes with the insert (the store puts it in the event).
          const machine: Machine = { ...planned.draft, id: 0, components: [] }
          carry(entry, machine)
          steps.push({ _tag: "Wrote", row: "insert", index: inserts.length, answer: activated })
          events.push({ event: machineActivated(planned.license, machine, now), insertIndex: inserts.length })
          inserts.push(planned.draft)
        } else {
          save(entry, planned.machine, activated, [machineActivated(planned.license, planned.machine, now)], planned.components)
        }
        break
      }
      case "Deactivate": {
        if (existing === undefined) {
          answered(Result.fail(machineNotFound()))
          break
        }
        const result = deactivateMachine(license, existing, "client", now)
        if (result.changed) save(entry, result.machine, (machine) => ({ license, machine }), result.events)
        else answered(Result.succeed({ license, machine: result.machine }))
        break
      }
      case "Heartbeat": {
        if (existing === undefined) {
          answered(Result.fail(machineNotFound()))
          break
        }
        const beat = recordHeartbeat({ license, machine: existing, appVersion: change.appVersion, now, blacklisted: change.blacklisted })
        if (Result.isFailure(beat)) {
          answered(Result.fail(beat.failure))
          break
        }
        save(entry, beat.success.machine, (machine) => ({ ...beat.success, machine, license, now }), [])
        break
      }
    }
  }

  return {
    licenses: [...changedLicenses.values()],
    writes: { inserts, updates, events },
    components,
    answers: (saved) =>
      steps.map((step) =>
        step._tag === "Answered"
          ? step.answer
          : Result.succeed(step.answer((step.row === "insert" ? saved.inserted : saved.updated)[step.index]!))
      )
  }
}
