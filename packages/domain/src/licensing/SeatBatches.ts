/**
 * The transactions of seat changes (activations, deactivations, heartbeats), planned by the pure core
 * (`seatChanges.ts`). A call alone runs as a batch of one: lock its license, read what it needs, plan, write row
 * by row (components included) with its events. Concurrent calls share transactions (group commit): they wait in
 * queues, one per worker fiber, the calls on one license always in the same queue (by a hash of the key): calls on
 * a busy license gather into one batch instead of several batches waiting for each other's lock, while different
 * licenses commit in parallel. Each worker takes what is waiting (no added delay when idle: calls gather while the
 * previous transaction runs) and runs it as ONE transaction:
 * - lock every license involved with one statement, in id order (`LicenseRepository.lockByKeys`), so that batches of
 *   several workers or processes cannot deadlock;
 * - read what the seat checks need with one statement (`MachineRepository.listForSeatChanges`);
 * - plan the calls in arrival order with {@link applySeatChanges}, against state carried from call to call (a
 *   seat taken by the first call counts for the second);
 * - write the machines inserted and updated and the events with one statement
 *   (`MachineRepository.writeSeatChanges`), plus a license update where a first activation changed it, then
 *   commit.
 * Each machine row is written at most once per batch: a call naming a (license, fingerprint) that an earlier
 * call of the batch named waits for the next batch. Each call gets its own result or its own domain error.
 * Calls the batch write cannot carry (an activation with components, a deactivation by machine id) run alone.
 * When the batch transaction itself fails (store unavailable, a defect), every call of the batch runs alone,
 * so one bad call never fails its neighbours and nothing is half-written.
 */
import { Clock, Context, Deferred, Effect, Exit, Queue, Result, type Scope } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import { EventOutbox, Store } from "../shared/ports.js"
import type { License, Machine } from "./model.js"
import { LicenseRepository, MachineRepository } from "./ports.js"
import {
  applySeatChanges,
  fingerprintOf,
  type SeatChange,
  type SeatChangeErrorOf,
  type SeatChangePlan,
  type SeatChangeResult
} from "./seatChanges.js"

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

/** The answer to a call whose batch failed as a whole: run it alone. */
const RunAlone: unique symbol = Symbol.for("@lm/domain/SeatBatches/RunAlone")
type RunAlone = typeof RunAlone

/** A call waiting for its batch; `onLicense` notes the license it found (for the event log). */
interface Waiting {
  readonly change: SeatChange
  readonly onLicense: (licenseId: number) => void
  readonly answer: Deferred.Deferred<unknown, unknown>
}

/** The machine a batchable change names (see {@link batchable}). */
const pairOf = (change: SeatChange) => `${change.key}\u0000${fingerprintOf(change)}`

/**
 * Whether the batch write carries the change: it writes no components (`writeSeatChanges`), and a batch keeps
 * one call per (license, fingerprint), so a deactivation by machine id runs alone.
 */
const batchable = (change: SeatChange): boolean =>
  change._tag === "Activate" ? change.facts.components === undefined : fingerprintOf(change) !== undefined

/** The worker whose queue takes calls on this license key (FNV-1a hash of the key). */
const workerOf = (key: string, workers: number): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return (hash >>> 0) % workers
}

/** The executor: `submit` runs a seat change, in a batch when one can carry it, else alone. */
export interface SeatBatches {
  /** Answers the change; `onLicense` is told the license's id as soon as it is locked (for the event log). */
  readonly submit: <C extends SeatChange>(
    change: C,
    onLicense: (licenseId: number) => void
  ) => Effect.Effect<SeatChangeResult<C>, SeatChangeErrorOf<C> | StorageUnavailable>
}

/** Starts the workers for the scope, on the ports in context. With `workers: 0` every call runs alone. */
export const makeSeatBatches: Effect.Effect<
  SeatBatches,
  never,
  Store | LicenseRepository | MachineRepository | EventOutbox | Scope.Scope
> = Effect.gen(function*() {
  const settings = yield* SeatBatchSettings
  const store = yield* Store
  const licenses = yield* LicenseRepository
  const machines = yield* MachineRepository
  const outbox = yield* EventOutbox

  /** What one change needs read under the lock: the license's active machines for an activation, else its record. */
  const readFor = (change: SeatChange, license: License): Effect.Effect<ReadonlyArray<Machine>, StorageUnavailable> => {
    const listed = (machine: Machine | undefined) => (machine === undefined ? [] : [machine])
    switch (change._tag) {
      case "Activate":
        return machines.listForValidation(license.id, change.facts.fingerprint)
      case "Heartbeat":
        return Effect.map(machines.findByFingerprint(license.id, change.fingerprint), listed)
      case "Deactivate":
        return change.fingerprint !== undefined
          ? Effect.map(machines.findByFingerprint(license.id, change.fingerprint), listed)
          : Effect.map(machines.findById(change.machineId), listed)
    }
  }

  /** Writes a plan row by row (components included), then its events with the inserted machines' ids. */
  const writeRows = Effect.fnUntraced(function*(plan: SeatChangePlan) {
    for (const license of plan.licenses) yield* licenses.update(license)
    const inserted = yield* Effect.forEach(plan.writes.inserts, (draft) => machines.insert(draft))
    const updated = yield* Effect.forEach(plan.writes.updates, (machine, i) => machines.update(machine, plan.components[i]))
    const events = plan.writes.events.map(({ event, insertIndex }) =>
      insertIndex === undefined ? event : { ...event, machineId: inserted[insertIndex]!.id }
    )
    if (events.length > 0) yield* outbox.append(events)
    return plan.answers({ inserted, updated })
  })

  /** One change in its own transaction: a batch of one, written row by row. */
  const alone = <C extends SeatChange>(change: C, onLicense: (licenseId: number) => void) =>
    store.transaction(
      Effect.gen(function*() {
        const license = yield* licenses.lockByKey(change.key)
        if (license !== undefined) onLicense(license.id)
        const found = license === undefined ? [] : yield* readFor(change, license)
        const now = yield* Clock.currentTimeMillis
        const [answer] = yield* writeRows(applySeatChanges([change], license === undefined ? [] : [license], found, now))
        return yield* Effect.fromResult(answer!)
      })
    ) as Effect.Effect<SeatChangeResult<C>, SeatChangeErrorOf<C> | StorageUnavailable>

  if (settings.workers <= 0) return { submit: alone }
  const maxBatch = Math.max(1, settings.maxBatch)
  // One queue per worker, a license always on the same one: calls on one license gather into one batch instead
  // of several batches that would wait for each other's lock; different licenses still commit in parallel.
  const queues = yield* Effect.forEach(Array.from({ length: settings.workers }), () => Queue.unbounded<Waiting>())

  /** Answers each of `list` {@link RunAlone}. */
  const answerRunAlone = (list: ReadonlyArray<Waiting>) =>
    Effect.forEach(list, (waiting) => Deferred.succeed(waiting.answer, RunAlone), { discard: true })

  /** One transaction for the batch; the answers in call order. */
  const write = (batch: ReadonlyArray<Waiting>) =>
    store.transaction(
      Effect.gen(function*() {
        const locked = yield* licenses.lockByKeys([...new Set(batch.map((w) => w.change.key))])
        const idOfKey = new Map(locked.map((license) => [license.key, license.id]))
        const named: Array<{ licenseId: number; fingerprint: string }> = []
        for (const waiting of batch) {
          const licenseId = idOfKey.get(waiting.change.key)
          if (licenseId === undefined) continue
          waiting.onLicense(licenseId)
          named.push({ licenseId, fingerprint: fingerprintOf(waiting.change)! })
        }
        const found = yield* machines.listForSeatChanges(named)
        const now = yield* Clock.currentTimeMillis
        const plan = applySeatChanges(batch.map((w) => w.change), locked, found, now)
        for (const license of plan.licenses) yield* licenses.update(license)
        const inserted = yield* machines.writeSeatChanges(plan.writes)
        return plan.answers({ inserted, updated: plan.writes.updates })
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
      Effect.ensuring(answerRunAlone(batch))
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
    }).pipe(Effect.ensuring(Effect.suspend(() => answerRunAlone(held))))
  })

  for (const queue of queues) yield* Effect.forkScoped(worker(queue))
  yield* Effect.addFinalizer(() =>
    Effect.forEach(queues, (queue) =>
      Effect.flatMap(Queue.clear(queue), answerRunAlone).pipe(
        Effect.andThen(Queue.shutdown(queue)),
        Effect.ignore
      ), { discard: true })
  )

  /** Waits for the change's batch; {@link RunAlone} when it could not be written. */
  const batched = <C extends SeatChange>(change: C, onLicense: (licenseId: number) => void) =>
    Effect.suspend(() => {
      const answer = Deferred.makeUnsafe<unknown, unknown>()
      const queue = queues[workerOf(change.key, queues.length)]!
      if (!Queue.offerUnsafe(queue, { change, onLicense, answer })) return Effect.succeed(RunAlone)
      return Deferred.await(answer) as Effect.Effect<SeatChangeResult<C> | RunAlone, SeatChangeErrorOf<C>>
    })

  return {
    submit: <C extends SeatChange>(change: C, onLicense: (licenseId: number) => void) =>
      batchable(change)
        ? Effect.flatMap(batched(change, onLicense), (answer) => answer === RunAlone ? alone(change, onLicense) : Effect.succeed(answer))
        : alone(change, onLicense)
  }
})
