/**
 * Group commit of seat changes. Concurrent activations, deactivations and heartbeats wait in queues, one per
 * worker fiber, the calls on one license always in the same queue (by a hash of the key): calls on a busy license
 * gather into one batch instead of several batches waiting for each other's lock, while different licenses
 * commit in parallel. Each worker takes what is waiting (no added delay when idle: calls gather while the
 * previous transaction runs) and runs it as ONE transaction:
 * - lock every license involved with one statement, in id order (`Store.lockLicenses`), so that batches of
 *   several workers or processes cannot deadlock;
 * - read what the seat checks need with one statement (`MachineRepository.listForSeatChanges`);
 * - apply the calls in arrival order through the pure core (`planActivation`, `deactivateMachine`,
 *   `recordHeartbeat`) against state carried from call to call (a seat taken by the first call counts for the
 *   second), see {@link applySeatChanges};
 * - write the machines inserted and updated and the events with one statement
 *   (`MachineRepository.writeSeatChanges`), plus a license update where a first activation changed it, then
 *   commit.
 * Each machine row is written at most once per batch: a call naming a (license, fingerprint) that an earlier
 * call of the batch named waits for the next batch. Each call gets its own result or its own domain error.
 * When the batch transaction itself fails (store unavailable, a defect), every call of the batch is answered
 * {@link RunAlone}: its caller runs it through the single-call path, so one bad call never fails its neighbours
 * and nothing is half-written.
 */
import { Clock, Context, Deferred, Effect, Exit, Queue, Result, type Scope } from "effect"
import {
  licenseNotFound,
  type LicenseNotFound,
  type MachineInactive,
  type MachineLimitExceeded,
  machineNotFound,
  type MachineNotFound,
  type Refused
} from "../errors.js"
import { deactivateMachine, machineActivated, planActivation, recordHeartbeat } from "../machine.js"
import type { DomainEvent, License, Machine, MachineDraft, MachineFacts } from "../model.js"
import { LicenseRepository, MachineRepository, type SeatChangeWrites, Store } from "../ports.js"
import type { ActivateResult, DeactivateResult, HeartbeatResult } from "./Licensing.js"

/** How seat changes are grouped. */
export interface SeatBatchOptions {
  /**
   * Worker fibers, i.e. batch transactions that may run at once (each holds a store connection while it runs);
   * 0 runs every call alone. Default 2: under load, fewer and larger batches beat more and smaller ones.
   */
  readonly workers: number
  /** Most calls in one batch. Default 128. */
  readonly maxBatch: number
}

/** The grouping of seat changes; provide another value to tune it (or `workers: 0` to turn it off). */
export const SeatBatchSettings = Context.Reference<SeatBatchOptions>("@lm/domain/SeatBatchSettings", {
  defaultValue: () => ({ workers: 2, maxBatch: 128 })
})

/** A seat change a client asked for; the key is already parsed, the blacklist already consulted. */
export type SeatChange =
  | {
    readonly _tag: "Activate"
    readonly key: string
    /** Without components (an activation with components runs alone). */
    readonly facts: MachineFacts
    readonly blacklisted: boolean
  }
  | { readonly _tag: "Deactivate"; readonly key: string; readonly fingerprint: string }
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

/** The answer to a call whose batch failed as a whole: run it alone. */
export const RunAlone: unique symbol = Symbol.for("@lm/domain/SeatBatches/RunAlone")
export type RunAlone = typeof RunAlone

/** The writes of one batch and how to answer each call once the inserted machines have their ids. */
export interface SeatChangePlan {
  /** Licenses a first activation changed, in their final state. */
  readonly licenses: ReadonlyArray<License>
  /** The machine writes and the events, in call order (`MachineRepository.writeSeatChanges`). */
  readonly writes: SeatChangeWrites
  /** The answers, in call order, given the inserted machines in draft order. */
  readonly answers: (inserted: ReadonlyArray<Machine>) => ReadonlyArray<Answer>
}

/** One call's answer. */
export type Answer = Result.Result<ActivateResult | DeactivateResult | HeartbeatResult, SeatChangeError>

/** What one call of the batch did, before the inserted machines have ids. */
type Step =
  | { readonly _tag: "Answered"; readonly answer: Answer }
  | { readonly _tag: "Inserted"; readonly index: number; readonly license: License }

/** A license during a batch: its latest state, machines holding `active` status and records by fingerprint. */
interface LicenseInBatch {
  license: License
  readonly active: Map<string, Machine>
  readonly records: Map<string, Machine>
}

/**
 * Applies seat changes in order against the locked licenses and their machines (as `listForSeatChanges`
 * answered), through the pure core, carrying the state forward from call to call. At most one call per
 * (license, fingerprint). Pure: the caller writes the plan.
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
  const steps: Array<Step> = []
  const events: Array<{ readonly event: DomainEvent; readonly insertIndex?: number }> = []
  const answered = (answer: Answer, emitted: ReadonlyArray<DomainEvent> = []) => {
    steps.push({ _tag: "Answered", answer })
    for (const event of emitted) events.push({ event })
  }
  /** Puts a machine's new state in place for the calls that follow. */
  const carry = (entry: LicenseInBatch, machine: Machine) => {
    entry.records.set(machine.fingerprint, machine)
    if (machine.status === "active") entry.active.set(machine.fingerprint, machine)
    else entry.active.delete(machine.fingerprint)
  }
  /** `carry`, and the machine's row is written with the batch. */
  const save = (entry: LicenseInBatch, machine: Machine) => {
    carry(entry, machine)
    updates.push(machine)
  }

  for (const change of changes) {
    const entry = byKey.get(change.key)
    if (entry === undefined) {
      answered(Result.fail(licenseNotFound()))
      continue
    }
    const license = entry.license
    const existing = entry.records.get(fingerprintOf(change))
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
        if (planned._tag === "Insert") {
          // Counts for the seat checks that follow; its id comes with the insert (the store puts it in the event).
          const machine: Machine = { ...planned.draft, id: 0, components: [] }
          carry(entry, machine)
          steps.push({ _tag: "Inserted", index: inserts.length, license: planned.license })
          events.push({ event: machineActivated(planned.license, machine, now), insertIndex: inserts.length })
          inserts.push(planned.draft)
        } else {
          save(entry, planned.machine)
          answered(Result.succeed({ license: planned.license, machine: planned.machine, created: true, now }), [
            machineActivated(planned.license, planned.machine, now)
          ])
        }
        break
      }
      case "Deactivate": {
        if (existing === undefined) {
          answered(Result.fail(machineNotFound()))
          break
        }
        const result = deactivateMachine(license, existing, "client", now)
        if (result.changed) save(entry, result.machine)
        answered(Result.succeed({ license, machine: result.machine }), result.events)
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
        save(entry, beat.success.machine)
        answered(Result.succeed({ ...beat.success, license, now }))
        break
      }
    }
  }

  return {
    licenses: [...changedLicenses.values()],
    writes: { inserts, updates, events },
    answers: (inserted) =>
      steps.map((step) =>
        step._tag === "Answered"
          ? step.answer
          : Result.succeed({ license: step.license, machine: inserted[step.index]!, created: true, now })
      )
  }
}

/** A call waiting for its batch; `onLicense` notes the license it found (for the event log). */
interface Waiting {
  readonly change: SeatChange
  readonly onLicense: (licenseId: number) => void
  readonly answer: Deferred.Deferred<unknown, unknown>
}

/** The fingerprint a change names. */
const fingerprintOf = (change: SeatChange): string => change._tag === "Activate" ? change.facts.fingerprint : change.fingerprint

const pairOf = (change: SeatChange) => `${change.key}\u0000${fingerprintOf(change)}`

/** The worker whose queue takes calls on this license key (FNV-1a hash of the key). */
const workerOf = (key: string, workers: number): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return (hash >>> 0) % workers
}

/** The executor: `submit` answers a seat change, or {@link RunAlone} when its batch could not be written. */
export interface SeatBatches {
  readonly submit: <C extends SeatChange>(
    change: C,
    onLicense: (licenseId: number) => void
  ) => Effect.Effect<SeatChangeResult<C> | RunAlone, SeatChangeErrorOf<C>>
}

/**
 * Starts the workers for the scope, on the ports in context. With `workers: 0` every call is answered
 * {@link RunAlone} at once.
 */
export const makeSeatBatches: Effect.Effect<
  SeatBatches,
  never,
  Store | LicenseRepository | MachineRepository | Scope.Scope
> = Effect.gen(function*() {
  const settings = yield* SeatBatchSettings
  if (settings.workers <= 0) return { submit: () => Effect.succeed(RunAlone) }
  const store = yield* Store
  const licenses = yield* LicenseRepository
  const machines = yield* MachineRepository
  const maxBatch = Math.max(1, settings.maxBatch)
  // One queue per worker, a license always on the same one: calls on one license gather into one batch instead
  // of several batches that would wait for each other's lock; different licenses still commit in parallel.
  const queues = yield* Effect.forEach(Array.from({ length: settings.workers }), () => Queue.unbounded<Waiting>())

  const runAlone = (list: ReadonlyArray<Waiting>) =>
    Effect.forEach(list, (waiting) => Deferred.succeed(waiting.answer, RunAlone), { discard: true })

  /** One transaction for the batch; the answers in call order. */
  const write = (batch: ReadonlyArray<Waiting>) =>
    store.transaction(
      Effect.gen(function*() {
        const locked = yield* store.lockLicenses([...new Set(batch.map((w) => w.change.key))])
        const idOfKey = new Map(locked.map((license) => [license.key, license.id]))
        const named: Array<{ licenseId: number; fingerprint: string }> = []
        for (const waiting of batch) {
          const licenseId = idOfKey.get(waiting.change.key)
          if (licenseId === undefined) continue
          waiting.onLicense(licenseId)
          const change = waiting.change
          named.push({ licenseId, fingerprint: fingerprintOf(change) })
        }
        const found = yield* machines.listForSeatChanges(named)
        const now = yield* Clock.currentTimeMillis
        const plan = applySeatChanges(batch.map((w) => w.change), locked, found, now)
        for (const license of plan.licenses) yield* licenses.update(license)
        const inserted = yield* machines.writeSeatChanges(plan.writes)
        return plan.answers(inserted)
      })
    )

  const run = (batch: ReadonlyArray<Waiting>) =>
    Effect.exit(write(batch)).pipe(
      Effect.flatMap((exit) =>
        Effect.forEach(batch, (waiting, i) => {
          if (Exit.isFailure(exit)) return Deferred.succeed(waiting.answer, RunAlone)
          const answer = exit.value[i]!
          return Result.isSuccess(answer)
            ? Deferred.succeed(waiting.answer, answer.success)
            : Deferred.fail(waiting.answer, answer.failure)
        }, { discard: true })
      ),
      // Whatever happens to the worker, no caller is left waiting (a completed answer stays as it is).
      Effect.ensuring(runAlone(batch))
    )

  const worker = (queue: Queue.Queue<Waiting>) => Effect.suspend(() => {
    /** Calls that wait for the next batch because an earlier call of theirs named the same machine. */
    let held: Array<Waiting> = []
    return Effect.gen(function*() {
      while (true) {
        const taken = held.length === 0
          ? yield* Queue.takeBetween(queue, 1, maxBatch)
          : yield* Queue.takeBetween(queue, 0, maxBatch - held.length)
        const batch: Array<Waiting> = []
        const next: Array<Waiting> = []
        const named = new Set<string>()
        for (const waiting of [...held, ...taken]) {
          const pair = pairOf(waiting.change)
          if (named.has(pair)) next.push(waiting)
          else {
            named.add(pair)
            batch.push(waiting)
          }
        }
        held = next
        yield* run(batch)
      }
    }).pipe(Effect.ensuring(Effect.suspend(() => runAlone(held))))
  })

  for (const queue of queues) yield* Effect.forkScoped(worker(queue))
  yield* Effect.addFinalizer(() =>
    Effect.forEach(queues, (queue) =>
      Effect.flatMap(Queue.clear(queue), runAlone).pipe(
        Effect.andThen(Queue.shutdown(queue)),
        Effect.ignore
      ), { discard: true })
  )

  return {
    submit: <C extends SeatChange>(change: C, onLicense: (licenseId: number) => void) =>
      Effect.suspend(() => {
        const answer = Deferred.makeUnsafe<unknown, unknown>()
        const queue = queues[workerOf(change.key, queues.length)]!
        if (!Queue.offerUnsafe(queue, { change, onLicense, answer })) return Effect.succeed(RunAlone)
        return Deferred.await(answer) as Effect.Effect<SeatChangeResult<C> | RunAlone, SeatChangeErrorOf<C>>
      })
  }
})
