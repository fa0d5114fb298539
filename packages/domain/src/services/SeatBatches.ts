/**
 * Group commit of seat changes. Concurrent activations, deactivations and heartbeats wait in a queue; a few
 * worker fibers each take what is waiting (no added delay when idle: calls gather while the previous
 * transaction runs) and run it as ONE transaction:
 * - lock every license involved with one statement, in id order (`Store.lockLicenses`), so that batches of
 *   several workers or processes cannot deadlock;
 * - read what the seat checks need with one statement (`MachineRepository.listForSeatChanges`);
 * - apply the calls in arrival order through the pure core (`planActivation`, `deactivateMachine`,
 *   `recordHeartbeat`) against state carried from call to call (a seat taken by the first call counts for the
 *   second), see {@link applySeatChanges};
 * - write with a constant number of statements (machines inserted, machines updated, events, plus a license
 *   update where a first activation changed it), then commit.
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
import { EventOutbox, LicenseRepository, MachineRepository, Store } from "../ports.js"

/** How seat changes are grouped. */
export interface SeatBatchOptions {
  /** Worker fibers, i.e. batch transactions that may run at once; 0 runs every call alone. Default 4. */
  readonly workers: number
  /** Most calls in one batch. Default 128. */
  readonly maxBatch: number
}

/** The grouping of seat changes; provide another value to tune it (or `workers: 0` to turn it off). */
export const SeatBatchSettings = Context.Reference<SeatBatchOptions>("@lm/domain/SeatBatchSettings", {
  defaultValue: () => ({ workers: 4, maxBatch: 128 })
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

export interface Activated {
  readonly license: License
  readonly machine: Machine
  readonly created: boolean
  readonly now: number
}

export interface Deactivated {
  readonly license: License
  readonly machine: Machine
}

export interface HeartbeatRecorded {
  readonly license: License
  readonly machine: Machine
  readonly nextHeartbeatBefore: number
  readonly leaseExpiresAt: number | null
  readonly now: number
}

export type SeatChangeError = LicenseNotFound | MachineNotFound | Refused | MachineLimitExceeded | MachineInactive

/** The domain errors a seat change may answer, by kind. */
export type SeatChangeErrorOf<C extends SeatChange> = C extends { readonly _tag: "Activate" } ? LicenseNotFound | Refused | MachineLimitExceeded
  : C extends { readonly _tag: "Deactivate" } ? LicenseNotFound | MachineNotFound
  : LicenseNotFound | MachineNotFound | Refused | MachineInactive

/** What a seat change answers, by kind. */
export type SeatChangeResult<C extends SeatChange> = C extends { readonly _tag: "Activate" } ? Activated
  : C extends { readonly _tag: "Deactivate" } ? Deactivated
  : HeartbeatRecorded

/** The answer to a call whose batch failed as a whole: run it alone. */
export const RunAlone: unique symbol = Symbol.for("@lm/domain/SeatBatches/RunAlone")
export type RunAlone = typeof RunAlone

/** The writes of one batch and how to answer each call once the inserted machines have their ids. */
export interface SeatChangePlan {
  /** Licenses a first activation changed, in their final state. */
  readonly licenses: ReadonlyArray<License>
  readonly inserts: ReadonlyArray<MachineDraft>
  readonly updates: ReadonlyArray<Machine>
  /** The answers (in call order) and the events (in call order), given the inserted machines in draft order. */
  readonly finish: (inserted: ReadonlyArray<Machine>) => {
    readonly answers: ReadonlyArray<Result.Result<Activated | Deactivated | HeartbeatRecorded, SeatChangeError>>
    readonly events: ReadonlyArray<DomainEvent>
  }
}

type Answer = Result.Result<Activated | Deactivated | HeartbeatRecorded, SeatChangeError>

/** What one call of the batch did, before the inserted machines have ids. */
type Step =
  | { readonly _tag: "Answered"; readonly answer: Answer; readonly events: ReadonlyArray<DomainEvent> }
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
  const answered = (answer: Answer, events: ReadonlyArray<DomainEvent> = []) => steps.push({ _tag: "Answered", answer, events })
  /** Puts a machine's new state in place for the calls that follow. */
  const carry = (entry: LicenseInBatch, machine: Machine) => {
    entry.records.set(machine.fingerprint, machine)
    if (machine.status === "active") entry.active.set(machine.fingerprint, machine)
    else entry.active.delete(machine.fingerprint)
  }

  for (const change of changes) {
    const entry = byKey.get(change.key)
    if (entry === undefined) {
      answered(Result.fail(licenseNotFound()))
      continue
    }
    const license = entry.license
    switch (change._tag) {
      case "Activate": {
        const plan = planActivation({
          license,
          activeMachines: [...entry.active.values()],
          existing: entry.records.get(change.facts.fingerprint),
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
          // Counts for the seat checks that follow; its id comes with the insert.
          carry(entry, { ...planned.draft, id: 0, components: [] })
          steps.push({ _tag: "Inserted", index: inserts.length, license: planned.license })
          inserts.push(planned.draft)
        } else {
          carry(entry, planned.machine)
          updates.push(planned.machine)
          answered(Result.succeed({ license: planned.license, machine: planned.machine, created: true, now }), [
            machineActivated(planned.license, planned.machine, now)
          ])
        }
        break
      }
      case "Deactivate": {
        const machine = entry.records.get(change.fingerprint)
        if (machine === undefined) {
          answered(Result.fail(machineNotFound()))
          break
        }
        const result = deactivateMachine(license, machine, "client", now)
        if (result.changed) {
          carry(entry, result.machine)
          updates.push(result.machine)
        }
        answered(Result.succeed({ license, machine: result.machine }), result.events)
        break
      }
      case "Heartbeat": {
        const machine = entry.records.get(change.fingerprint)
        if (machine === undefined) {
          answered(Result.fail(machineNotFound()))
          break
        }
        const beat = recordHeartbeat({ license, machine, appVersion: change.appVersion, now, blacklisted: change.blacklisted })
        if (Result.isFailure(beat)) {
          answered(Result.fail(beat.failure))
          break
        }
        carry(entry, beat.success.machine)
        updates.push(beat.success.machine)
        answered(Result.succeed({ ...beat.success, license, now }))
        break
      }
    }
  }

  return {
    licenses: [...changedLicenses.values()],
    inserts,
    updates,
    finish: (inserted) => {
      const answers: Array<Answer> = []
      const events: Array<DomainEvent> = []
      for (const step of steps) {
        if (step._tag === "Answered") {
          answers.push(step.answer)
          events.push(...step.events)
        } else {
          const machine = inserted[step.index]!
          answers.push(Result.succeed({ license: step.license, machine, created: true, now }))
          events.push(machineActivated(step.license, machine, now))
        }
      }
      return { answers, events }
    }
  }
}

/** A call waiting for its batch; `onLicense` notes the license it found (for the event log). */
interface Waiting {
  readonly change: SeatChange
  readonly onLicense: (licenseId: number) => void
  readonly answer: Deferred.Deferred<unknown, unknown>
}

const pairOf = (change: SeatChange) =>
  `${change.key}\u0000${change._tag === "Activate" ? change.facts.fingerprint : change.fingerprint}`

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
  Store | LicenseRepository | MachineRepository | EventOutbox | Scope.Scope
> = Effect.gen(function*() {
  const settings = yield* SeatBatchSettings
  if (settings.workers <= 0) return { submit: () => Effect.succeed(RunAlone) }
  const store = yield* Store
  const licenses = yield* LicenseRepository
  const machines = yield* MachineRepository
  const outbox = yield* EventOutbox
  const maxBatch = Math.max(1, settings.maxBatch)
  const queue = yield* Queue.unbounded<Waiting>()

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
          named.push({ licenseId, fingerprint: change._tag === "Activate" ? change.facts.fingerprint : change.fingerprint })
        }
        const found = yield* machines.listForSeatChanges(named)
        const now = yield* Clock.currentTimeMillis
        const plan = applySeatChanges(batch.map((w) => w.change), locked, found, now)
        for (const license of plan.licenses) yield* licenses.update(license)
        const inserted = yield* machines.insertMany(plan.inserts)
        yield* machines.updateMany(plan.updates)
        const { answers, events } = plan.finish(inserted)
        yield* outbox.append(events)
        return answers
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

  const worker = Effect.suspend(() => {
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

  for (let i = 0; i < settings.workers; i++) yield* Effect.forkScoped(worker)
  yield* Effect.addFinalizer(() =>
    Effect.flatMap(Queue.clear(queue), runAlone).pipe(
      Effect.andThen(Queue.shutdown(queue)),
      Effect.ignore
    )
  )

  return {
    submit: <C extends SeatChange>(change: C, onLicense: (licenseId: number) => void) =>
      Effect.suspend(() => {
        const answer = Deferred.makeUnsafe<unknown, unknown>()
        if (!Queue.offerUnsafe(queue, { change, onLicense, answer })) return Effect.succeed(RunAlone)
        return Deferred.await(answer) as Effect.Effect<SeatChangeResult<C> | RunAlone, SeatChangeErrorOf<C>>
      })
  }
})
