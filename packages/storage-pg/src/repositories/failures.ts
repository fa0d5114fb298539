/**
 * SQL failures as the ports declare them: `StorageUnavailable` when the store cannot serve now (the verdicts of
 * `sqlState.ts`), a defect for anything else (a 500 with the cause logged, never a silently swallowed error).
 *
 * Every call failed so counts in `lm_store_unavailable_total`. A store outage is logged here, once: a warning when it starts, again at most every {@link OUTAGE_LOG_INTERVAL}
 * while calls keep failing, and a line when a call succeeds again; the requests it fails answer 503 without a log
 * line each. The state is the store's ({@link OutageLog}): each store layer has its own.
 */
import { Context, Duration, Effect, Layer, Metric } from "effect"
import { Errors, Metrics, Ports } from "@lm/domain"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { classify, describe, sqlStateOf } from "./sqlState.js"

/** Whether a SQL failure means the store cannot be reached or used now (as opposed to a bug). */
export const isUnavailable = (error: SqlError): boolean => classify(error).verdict === "unavailable"

/** Whether a failure is a transaction that lost a deadlock or a serialization conflict (worth running again). */
export const isDeadlock = (error: unknown): boolean => isSqlError(error) && classify(error).verdict === "retry"

/**
 * A `StorageUnavailable` for a SQL failure. Clients see the SQLSTATE only: the server's own text can name the
 * database, its user or its host, so it goes to the log (see {@link noteOutage}).
 */
export const storeUnavailable = (error: SqlError): Errors.StorageUnavailable => {
  const state = sqlStateOf(error)
  return new Errors.StorageUnavailable({
    message: `The store is unavailable${state === undefined ? "" : ` (SQLSTATE ${state})`}; try again shortly.`
  })
}

/** The store could not be opened at start: the operator reads this one, so it names the server's own message. */
export const storeUnavailableAtStart = (error: SqlError): Errors.StorageUnavailable =>
  new Errors.StorageUnavailable({ message: `The store is unavailable: ${describe(error)}` })

/**
 * How long one store call (or one whole transaction) may take by default before it is answered as unavailable. A
 * server that stops answering without closing its connections would otherwise hold the request forever.
 */
export const STORE_CALL_TIMEOUT: Duration.Input = "15 seconds"

/**
 * The store call bound of the store being built (the pg store layers' `storeCallTimeout` option), read once by each
 * repository when its layer is built.
 */
export const StoreCallTimeout = Context.Reference<Duration.Input>("@lm/storage-pg/StoreCallTimeout", {
  defaultValue: () => STORE_CALL_TIMEOUT
})

/** The bound of a call under `Ports.BulkWrite` (an import of 10,000 licenses with their machines, on a busy PGlite). */
export const BULK_STORE_CALL_TIMEOUT = "5 minutes"

/** How often a continuing outage is logged again. */
export const OUTAGE_LOG_INTERVAL = Duration.seconds(10)

/**
 * One store's outage: since when, when it was last logged, how many calls it failed; `undefined` while the store
 * answers. Each store has its own (two stores in one process, or a test beside other tests' stores, never end or
 * count each other's outages).
 */
export interface OutageLog {
  current: { readonly since: number; loggedAt: number; failures: number } | undefined
}

export const makeOutageLog = (): OutageLog => ({ current: undefined })

/**
 * The outage log of the store being built, read once by each repository when its layer is built: the store layers
 * give each store a new one ({@link layerOutageLog}); repositories built outside them share the default.
 */
export const StoreOutageLog = Context.Reference<OutageLog>("@lm/storage-pg/StoreOutageLog", { defaultValue: makeOutageLog })

/** A new outage log for the store a layer builds. */
export const layerOutageLog = Layer.sync(StoreOutageLog, makeOutageLog)

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

/** Notes a failed call: logs the outage when it starts, and again once per interval while it lasts. */
const noteOutage = (log: OutageLog, error: Errors.StorageUnavailable, detail = error.message): Effect.Effect<Errors.StorageUnavailable> =>
  Effect.andThen(Metric.update(Metrics.storeUnavailable, 1), Effect.clockWith((clock) => {
    const now = clock.currentTimeMillisUnsafe()
    const outage = log.current
    if (outage === undefined) {
      log.current = { since: now, loggedAt: now, failures: 1 }
      return Effect.as(Effect.logWarning(`${detail}; requests that need it answer 503 until it is back`), error)
    }
    outage.failures++
    if (now - outage.loggedAt < Duration.toMillis(OUTAGE_LOG_INTERVAL)) return Effect.succeed(error)
    outage.loggedAt = now
    const line = `${detail} (for ${seconds(now - outage.since)}, ${outage.failures} calls failed)`
    return Effect.as(Effect.logWarning(line), error)
  }))

/** Notes a successful call: ends the outage, if any, with one line. */
const noteAvailable = (log: OutageLog): Effect.Effect<void> => Effect.suspend(() => {
  const ended = log.current
  if (ended === undefined) return Effect.void
  log.current = undefined
  return Effect.clockWith((clock) =>
    Effect.logInfo(
      `The store is available again after ${seconds(clock.currentTimeMillisUnsafe() - ended.since)} (${ended.failures} calls failed)`
    )
  )
})

const timedOut = (log: OutageLog, bound: Duration.Input) => {
  const within = typeof bound === "string" ? bound : Duration.format(Duration.fromInputUnsafe(bound))
  return () =>
    Effect.flatMap(
      noteOutage(log, new Errors.StorageUnavailable({ message: `The store did not answer within ${within}.` })),
      Effect.fail
    )
}
/** Decoded once: a text duration would be parsed again by every call's timer (bench/README.md, activate profile). */
const bulkBound = Duration.fromInputUnsafe(BULK_STORE_CALL_TIMEOUT)

/** What a repository wraps each store call in (see {@link storeCalls}). */
export type OrUnavailable = <A, E, R>(
  effect: Effect.Effect<A, E | SqlError, R>
) => Effect.Effect<A, Exclude<E, SqlError> | Errors.StorageUnavailable, R>

/**
 * Turns the SQL failures of a store call into `StorageUnavailable` or a defect, and bounds it in time: by `timeout`,
 * or by {@link BULK_STORE_CALL_TIMEOUT} under `Ports.BulkWrite`.
 */
export const orUnavailableWithin = (timeout: Duration.Input, log: OutageLog): OrUnavailable => {
  const timedOutCall = timedOut(log, timeout)
  const timedOutBulk = timedOut(log, BULK_STORE_CALL_TIMEOUT)
  const available = noteAvailable(log)
  const bound = Duration.fromInputUnsafe(timeout)
  return <A, E, R>(
    effect: Effect.Effect<A, E | SqlError, R>
  ): Effect.Effect<A, Exclude<E, SqlError> | Errors.StorageUnavailable, R> =>
    Effect.catchIf(
      effect,
      isSqlError,
      (error) =>
        isUnavailable(error)
          ? Effect.flatMap(noteOutage(log, storeUnavailable(error), `The store is unavailable: ${describe(error)}`), Effect.fail)
          : Effect.die(error)
    ).pipe(
      Effect.tap(() => available),
      (call) =>
        Effect.withFiber((fiber) =>
          fiber.getRef(Ports.BulkWrite)
            ? Effect.timeoutOrElse(call, { duration: bulkBound, orElse: timedOutBulk })
            : Effect.timeoutOrElse(call, { duration: bound, orElse: timedOutCall })
        )
    )
}

/**
 * {@link orUnavailableWithin} the bound ({@link StoreCallTimeout}) and with the outage log ({@link StoreOutageLog})
 * of the store being built: `yield*` it in a repository's layer.
 */
export const storeCalls: Effect.Effect<OrUnavailable> = Effect.map(
  Effect.all([Effect.service(StoreCallTimeout), Effect.service(StoreOutageLog)]),
  ([timeout, log]) => orUnavailableWithin(timeout, log)
)
