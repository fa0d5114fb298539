/**
 * Writes the event log off the request path: client calls push entries into a buffer, a background fiber
 * writes them to the `ActivityLog` port in batches, and closing the layer flushes what is left.
 */
import { Context, Effect, Layer, Schedule, Semaphore } from "effect"
import type { ActivityEntry } from "../model.js"
import { ActivityLog } from "../ports.js"

export interface ActivityRecorderOptions {
  /** How often the buffer is written (default 250 ms). */
  readonly flushEveryMillis?: number
  /** A batch is written at once when it reaches this size (default 500). */
  readonly maxBatch?: number
}

export class ActivityRecorder extends Context.Service<ActivityRecorder, {
  /** Buffers one entry; never waits for the store. */
  readonly record: (entry: ActivityEntry) => Effect.Effect<void>
  /** Writes everything buffered so far. */
  readonly flush: Effect.Effect<void>
}>()("@lm/domain/ActivityRecorder") {
  static readonly layer = (options: ActivityRecorderOptions = {}) =>
    Layer.effect(
      ActivityRecorder,
      Effect.gen(function*() {
        const log = yield* ActivityLog
        const maxBatch = options.maxBatch ?? 500
        let buffer: Array<ActivityEntry> = []
        const writing = yield* Semaphore.make(1)

        const flush = Semaphore.withPermit(writing)(
          Effect.suspend(() => {
            if (buffer.length === 0) return Effect.void
            const batch = buffer
            buffer = []
            return log.record(batch).pipe(
              Effect.catch((error) =>
                // Keep the entries for the next attempt rather than lose them.
                Effect.sync(() => {
                  buffer = batch.concat(buffer)
                }).pipe(Effect.andThen(Effect.logWarning("event log write failed; will retry", error.message)))
              )
            )
          })
        )

        yield* flush.pipe(
          Effect.repeat(Schedule.spaced(`${options.flushEveryMillis ?? 250} millis`)),
          Effect.forkScoped
        )
        yield* Effect.addFinalizer(() => flush)

        const record = (entry: ActivityEntry) =>
          Effect.suspend(() => {
            buffer.push(entry)
            return buffer.length >= maxBatch ? Effect.forkDetach(flush).pipe(Effect.asVoid) : Effect.void
          })

        return ActivityRecorder.of({ record, flush })
      })
    )

  /** A recorder that keeps nothing (for embedding without analytics). */
  static readonly layerDiscard = Layer.succeed(ActivityRecorder, ActivityRecorder.of({ record: () => Effect.void, flush: Effect.void }))
}
