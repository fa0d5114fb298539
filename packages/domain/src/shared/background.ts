/**
 * What background jobs (sweep, retention, webhook delivery, the period-end job, key refresh) share: how a failed
 * round is reported, and how a job made of batches yields to the requests the process serves.
 *
 * A failed round: the store reports an outage itself, once when it starts and once when it ends; a round that
 * failed only because the store was unavailable is therefore logged at debug level, so that an outage is one
 * warning, not one per job per round. Anything else is a warning with its cause.
 */
import { Cause, Clock, Context, Duration, Effect } from "effect"
import { StorageUnavailable } from "./errors.js"

/**
 * How busy the process is with requests. `requestsStarted` counts the requests it has started so far (the HTTP
 * server advances it; the default never moves). `busyShare` is the share of the time a batched background job
 * may take while requests keep arriving (see {@link yieldingToRequests}).
 */
export const RequestLoad = Context.Reference<{ readonly requestsStarted: () => number; readonly busyShare: number }>(
  "@lm/domain/RequestLoad",
  { defaultValue: () => ({ requestsStarted: () => 0, busyShare: 0.1 }) }
)

/**
 * Runs `batch` until it reports that no more work is waiting, and answers how much it did in all. After a batch
 * during which requests arrived, it rests until that batch's time is `busyShare` of the whole (nine times the
 * batch at 0.1): under saturation the job lags and catches up when the load drops; on an idle process it runs
 * batch after batch without rest.
 */
export const yieldingToRequests = <E, R>(batch: Effect.Effect<{ readonly done: number; readonly more: boolean }, E, R>) =>
  Effect.gen(function*() {
    const { busyShare, requestsStarted } = yield* RequestLoad
    let total = 0
    while (true) {
      const requestsBefore = requestsStarted()
      const started = yield* Clock.currentTimeMillis
      const { done, more } = yield* batch
      total += done
      if (!more) return total
      if (requestsStarted() !== requestsBefore && busyShare > 0 && busyShare < 1) {
        // At least a millisecond: a batch under a clock that does not move still rests.
        const took = Math.max(1, (yield* Clock.currentTimeMillis) - started)
        yield* Effect.sleep(Duration.millis(Math.ceil(took * (1 - busyShare) / busyShare)))
      }
    }
  })

/** The cause holds failures only, each a `StorageUnavailable`. */
export const onlyStorageUnavailable = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.length > 0 &&
  cause.reasons.every((reason) => Cause.isFailReason(reason) && reason.error instanceof StorageUnavailable)

/** For `Effect.catchCause`: logs a failed round of the job `what`. */
export const logRoundFailure = (what: string) => (cause: Cause.Cause<unknown>) =>
  onlyStorageUnavailable(cause) ? Effect.logDebug(what, cause) : Effect.logWarning(what, cause)
