/**
 * SQL failures as the ports declare them: `StorageUnavailable` when the store cannot be reached or does not
 * answer in time, a defect for anything else (a 500 with the cause logged, never a silently swallowed error).
 */
import { Effect } from "effect"
import { Errors } from "@lm/domain"
import { isSqlError, type SqlError } from "effect/sql/SqlError"

const unavailableReasons: ReadonlySet<string> = new Set([
  "ConnectionError",
  "AuthenticationError",
  "AuthorizationError",
  "LockTimeoutError",
  "StatementTimeoutError"
])

/** Whether a SQL failure means the store cannot be reached or used now (as opposed to a bug). */
export const isUnavailable = (error: SqlError): boolean => unavailableReasons.has(error.reason._tag)

/** Whether a failure is a transaction that lost a deadlock (worth retrying). */
export const isDeadlock = (error: unknown): boolean => isSqlError(error) && error.reason._tag === "DeadlockError"

/**
 * How long one store call (or one whole transaction) may take before it is answered as unavailable. A server
 * that stops answering without closing its connections would otherwise hold the request forever.
 */
export const STORE_CALL_TIMEOUT = "15 seconds"

const timedOut = () =>
  Effect.fail(new Errors.StorageUnavailable({ message: `The store did not answer within ${STORE_CALL_TIMEOUT}.` }))

/** Turns the SQL failures of a store call into `StorageUnavailable` or a defect, and bounds it in time. */
export const orUnavailable = <A, E, R>(
  effect: Effect.Effect<A, E | SqlError, R>
): Effect.Effect<A, Exclude<E, SqlError> | Errors.StorageUnavailable, R> =>
  Effect.catchIf(
    effect,
    isSqlError,
    (error) =>
      isUnavailable(error)
        ? Effect.fail(new Errors.StorageUnavailable({ message: `The store is unavailable: ${error.message}` }))
        : Effect.die(error)
  ).pipe(Effect.timeoutOrElse({ duration: STORE_CALL_TIMEOUT, orElse: timedOut }))
