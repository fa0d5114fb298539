/**
 * Retention of the event log (and of the audit log, which follows the same window): entries older than the
 * retention window are deleted in the background, in small batches (one short statement each, with a pause between
 * them), so the log stops growing once it spans the window and pruning never holds up requests for long.
 *
 * Only raw event-log entries are deleted. No rollups exist yet (analytics is not built): when analytics adds
 * them, it rolls entries up before this deletes them and keeps its rollups in tables of their own, which this
 * job must leave alone.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { logRoundFailure } from "../shared/background.js"
import type { StorageUnavailable } from "../shared/errors.js"
import { ActivityLog } from "./ports.js"

const DAY_MILLIS = 86_400_000

export interface EventRetentionOptions {
  /** Entries older than this many days are deleted (fractions allowed: 0.5 is 12 hours). */
  readonly days: number
  /**
   * Time between runs; a run starts when the layer opens. Default: a tenth of the window, at most 1 hour (so
   * that an entry outlives the window by at most a tenth of it, and a short window is really kept short).
   */
  readonly every?: Duration.Input | undefined
  /** Entries deleted per statement (default 1,000). */
  readonly batch?: number | undefined
  /** Pause between two batches of a run (default 100 ms), so a large backlog is deleted at a gentle pace. */
  readonly pause?: Duration.Input | undefined
}

/** The default time between runs for a window of `days`: a tenth of it, from 1 second to 1 hour. */
export const defaultEvery = (days: number): Duration.Duration =>
  Duration.millis(Math.min(3_600_000, Math.max(1_000, Math.round((days * DAY_MILLIS) / 10))))

/** A log's `prune`: deletes at most `limit` entries older than `olderThan`, answers how many. */
export type Prune = (olderThan: number, limit: number) => Effect.Effect<number, StorageUnavailable>

/** Deletes every entry of a log older than `days` before now, batch by batch with `prune`; returns how many. */
export const pruneLog = (prune: Prune, options: EventRetentionOptions): Effect.Effect<number, StorageUnavailable> =>
  Effect.gen(function*() {
    const batch = Math.max(1, options.batch ?? 1_000)
    const olderThan = (yield* Clock.currentTimeMillis) - options.days * DAY_MILLIS
    let total = 0
    while (true) {
      const deleted = yield* prune(olderThan, batch)
      total += deleted
      if (deleted < batch) return total
      yield* Effect.sleep(options.pause ?? "100 millis")
    }
  })

/** Deletes every event-log entry older than `days` before now, batch by batch; returns how many. */
export const pruneOnce = (options: EventRetentionOptions): Effect.Effect<number, StorageUnavailable, ActivityLog> =>
  Effect.flatMap(ActivityLog, (log) => pruneLog(log.prune, options)).pipe(Effect.withSpan("EventRetention.pruneOnce"))

/** Runs `prune` on a log every run for as long as the layer lives; failures are logged and retried next run. */
export const layerPruning = <R>(
  what: string,
  prune: Effect.Effect<number, StorageUnavailable, R>,
  options: EventRetentionOptions
): Layer.Layer<never, never, R> =>
  Layer.effectDiscard(
    prune.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logInfo(`${what} retention deleted ${n} entries older than ${options.days} days`) : Effect.void)),
      Effect.catchCause(logRoundFailure(`${what} retention failed`)),
      Effect.repeat(Schedule.spaced(options.every ?? defaultEvery(options.days))),
      Effect.forkScoped
    )
  )

/** Runs {@link pruneOnce} in the background for as long as the layer lives; failures are logged and retried next run. */
export const layerBackground = (options: EventRetentionOptions): Layer.Layer<never, never, ActivityLog> =>
  layerPruning("event log", pruneOnce(options), options)
