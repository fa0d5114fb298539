/**
 * Writes the event log off the request path: client calls push entries into a buffer, a background fiber
 * writes them to the `ActivityLog` port in batches, and closing the layer flushes what is left.
 *
 * The buffer is bounded (`maxBuffered`): while the store is down it fills up, and then the oldest entries are
 * dropped (the newest are what analytics needs once the store is back); drops are counted and logged once when
 * they begin and once, with the count, when a write succeeds again (or the layer closes). A store outage is
 * logged once when writes start failing (with what is kept) and once when one succeeds again (with the count of
 * failed attempts), however many attempts fail in between.
 */
import { Cause, Clock, Context, Effect, Layer, Metric, Schedule, Semaphore } from "effect"
import * as Metrics from "../shared/metrics.js"
import type { ActivityEntry } from "./model.js"
import { ActivityLog } from "./ports.js"

export interface ActivityRecorderOptions {
  /** How often the buffer is written (default 250 ms). */
  readonly flushEveryMillis?: number
  /** A batch is written at once when it reaches this size (default 500). */
  readonly maxBatch?: number
  /**
   * Most entries held while the store cannot take them (default 100,000: some tens of MB); when full, the oldest
   * 1 % are dropped at once (dropping one per entry would move the whole buffer each time).
   */
  readonly maxBuffered?: number
}

/** The line logged when the event log closes with entries the store did not take. */
export const unwrittenMessage = (count: number): string =>
  `event log: ${count} events not written: the store did not take them before shutdown`

/** The bound of the buffer when none is given. */
export const defaultMaxBuffered = 100_000

export class ActivityRecorder extends Context.Service<ActivityRecorder, {
  /** Buffers one entry; never waits for the store. */
  readonly record: (entry: ActivityEntry) => Effect.Effect<void>
  /**
   * Buffers one entry at once, on the caller's stack (a synchronous caller: the fast path's validate), and
   * gives back the rest of `record`'s work (usually nothing: `Effect.void`; a batch write to start, or the
   * buffer's bound), which the caller runs. `record` is this, suspended.
   */
  readonly recordUnsafe: (entry: ActivityEntry) => Effect.Effect<void>
  /** Writes everything buffered so far. */
  readonly flush: Effect.Effect<void>
  /** How many entries were dropped, oldest first, because the buffer was full (since the layer opened). */
  readonly dropped: Effect.Effect<number>
  /** How many entries are not written yet (buffered, or in a write still running). */
  readonly pending: Effect.Effect<number>
}>()("@lm/domain/ActivityRecorder") {
  static readonly layer = (options: ActivityRecorderOptions = {}) =>
    Layer.effect(
      ActivityRecorder,
      Effect.gen(function*() {
        const log = yield* ActivityLog
        const maxBatch = options.maxBatch ?? 500
        const maxBuffered = Math.max(1, options.maxBuffered ?? defaultMaxBuffered)
        const flushEveryMillis = options.flushEveryMillis ?? 250
        let buffer: Array<ActivityEntry> = []
        const writing = yield* Semaphore.make(1)
        /** The size of the batch being written, until the store answers. */
        let inWrite = 0
        const pending = () => buffer.length + inWrite

        /** Dropped since the layer opened, and since the last report. */
        let droppedTotal = 0
        let droppedUnreported = 0
        /** Keeps the buffer within its bound, dropping the oldest entries; logs when an outage starts dropping. */
        const bound = () => {
          if (buffer.length <= maxBuffered) return Effect.void
          const excess = Math.min(buffer.length, Math.max(buffer.length - maxBuffered, Math.ceil(maxBuffered / 100)))
          buffer.splice(0, excess)
          droppedTotal += excess
          const first = droppedUnreported === 0
          droppedUnreported += excess
          const counted = Metric.update(Metrics.eventLogDropped, excess)
          return first
            ? Effect.andThen(
              counted,
              Effect.logWarning(`event log buffer full (${maxBuffered} entries): dropping the oldest until the store takes them again`)
            )
            : counted
        }
        /** One line with the count of an outage's drops, once a write succeeded again (or on close). */
        const reportDropped = Effect.suspend(() => {
          if (droppedUnreported === 0) return Effect.void
          const n = droppedUnreported
          droppedUnreported = 0
          return Effect.logWarning(`event log: ${n} entries dropped (the oldest) while the store could not take them`)
        })

        /** The outage under way: since when writes fail, and how many attempts failed; undefined while they succeed. */
        let outage: { readonly since: number; failures: number } | undefined
        /** Keeps entries for the next attempt rather than lose them (the store is unavailable for now). */
        const keep = (entries: ReadonlyArray<ActivityEntry>, message: string) =>
          Effect.gen(function*() {
            buffer = entries.concat(buffer)
            yield* bound()
            // One warning when writes start failing, not one per attempt (the writer retries every round).
            if (outage !== undefined) {
              outage.failures++
              return
            }
            outage = { since: yield* Clock.currentTimeMillis, failures: 1 }
            yield* Effect.logWarning(
              `event log write failed (${message}); ${pending()} entries kept and retried every ${flushEveryMillis} ms ` +
                `(beyond ${maxBuffered} the oldest are dropped); logged again when a write succeeds`
            )
          })
        /** One line when a write succeeds after an outage, with its count of failed attempts. */
        const reportRecovered = Effect.gen(function*() {
          if (outage === undefined) return
          const { failures, since } = outage
          outage = undefined
          const seconds = Math.round(((yield* Clock.currentTimeMillis) - since) / 1000)
          yield* Effect.logInfo(`event log writes succeed again after ${failures} failed attempts in ${seconds} s`)
        })

        /**
         * After the store refused a batch outright (a defect: e.g. text it cannot hold, such as U+0000), writes
         * its entries one by one so that only the refused ones are dropped (logged); the writer never stops.
         */
        const writeOneByOne = Effect.fnUntraced(function*(batch: ReadonlyArray<ActivityEntry>) {
          for (let i = 0; i < batch.length; i++) {
            const exit = yield* Effect.exit(log.record([batch[i]!]))
            if (exit._tag === "Success") continue
            const failure = exit.cause.reasons.find(Cause.isFailReason)
            if (failure !== undefined) return yield* keep(batch.slice(i), failure.error.message)
            if (Cause.hasInterrupts(exit.cause)) return yield* Effect.interrupt
            yield* Effect.logError("event log entry refused by the store; dropped", exit.cause)
          }
        })

        const flush = Semaphore.withPermit(writing)(
          Effect.suspend(() => {
            if (buffer.length === 0) return Effect.void
            const batch = buffer
            buffer = []
            inWrite = batch.length
            return log.record(batch).pipe(
              Effect.ensuring(Effect.sync(() => {
                inWrite = 0
              })),
              Effect.andThen(reportRecovered),
              Effect.andThen(reportDropped),
              Effect.catch((error) => keep(batch, error.message)),
              Effect.catchCause((cause) => Cause.hasInterrupts(cause) ? Effect.interrupt : writeOneByOne(batch))
            )
          })
        )

        yield* flush.pipe(
          // What is left unwritten after each round (entries kept through a store outage): `lm_event_log_buffered`.
          Effect.andThen(Effect.suspend(() => Metric.update(Metrics.eventLogBuffered, pending()))),
          Effect.repeat(Schedule.spaced(`${flushEveryMillis} millis`)),
          Effect.forkScoped
        )
        // On close, what the store did not take (it refused, or the caller's bound on closing ran out, see
        // `pending`) is said in one line.
        yield* Effect.addFinalizer(() =>
          Effect.andThen(flush, reportDropped).pipe(
            Effect.andThen(Effect.suspend(() => pending() === 0 ? Effect.void : Effect.logWarning(unwrittenMessage(pending()))))
          )
        )

        // A full buffer starts one writer that drains while batches stay full; further calls only buffer, so a
        // burst of calls never piles up writers waiting on each other.
        let draining = false
        const drain = flush.pipe(
          // A failed write waits for the periodic flush instead of retrying in a tight loop.
          Effect.repeat({ while: () => outage === undefined && buffer.length >= maxBatch }),
          Effect.ensuring(Effect.sync(() => {
            draining = false
          }))
        )
        const recordUnsafe = (entry: ActivityEntry): Effect.Effect<void> => {
          buffer.push(entry)
          if (buffer.length > maxBuffered) return bound()
          if (buffer.length < maxBatch || draining) return Effect.void
          draining = true
          return Effect.forkDetach(drain).pipe(Effect.asVoid)
        }
        const record = (entry: ActivityEntry) => Effect.suspend(() => recordUnsafe(entry))

        return ActivityRecorder.of({ record, recordUnsafe, flush, dropped: Effect.sync(() => droppedTotal), pending: Effect.sync(pending) })
      })
    )

  /** A recorder that keeps nothing (for embedding without analytics). */
  static readonly layerDiscard = Layer.succeed(
    ActivityRecorder,
    ActivityRecorder.of({ record: () => Effect.void, recordUnsafe: () => Effect.void, flush: Effect.void, dropped: Effect.succeed(0), pending: Effect.succeed(0) })
  )
}
