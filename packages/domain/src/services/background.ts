/**
 * How a background job (sweep, retention, webhook delivery, key refresh) reports a failed round. The store
 * reports an outage itself, once when it starts and once when it ends; a round that failed only because the
 * store was unavailable is therefore logged at debug level, so that an outage is one warning, not one per job
 * per round. Anything else is a warning with its cause.
 */
import { Cause, Effect } from "effect"
import { StorageUnavailable } from "../errors.js"

/** The cause holds failures only, each a `StorageUnavailable`. */
export const onlyStorageUnavailable = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.length > 0 &&
  cause.reasons.every((reason) => Cause.isFailReason(reason) && reason.error instanceof StorageUnavailable)

/** For `Effect.catchCause`: logs a failed round of the job `what`. */
export const logRoundFailure = (what: string) => (cause: Cause.Cause<unknown>) =>
  onlyStorageUnavailable(cause) ? Effect.logDebug(what, cause) : Effect.logWarning(what, cause)
