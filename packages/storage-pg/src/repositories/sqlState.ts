/**
 * What a SQL failure means for a request, decided in this one place: the store cannot serve now
 * (`unavailable`: 503 `service_unavailable` with `Retry-After`), a transaction worth running again (`retry`), or a
 * bug (`defect`: 500, logged with its cause).
 *
 * A failure the server reported (an `ErrorResponse`, at connect or at query time) carries its SQLSTATE: @effect/sql-pg
 * keeps the response's fields on the reason's `cause` (`cause.code`, `cause.message`, `cause.severity`) and only
 * names a few reasons itself (08 → ConnectionError, 28 → AuthenticationError, 57014 → StatementTimeoutError, …;
 * 53300 "too many connections" or 57P03 "starting up" arrive as `UnknownError`). So the SQLSTATE decides when there
 * is one; a failure of the client itself (refused, reset or closed socket, connect timeout) has none, and its reason
 * decides.
 */
import type { SqlError } from "effect/sql/SqlError"

/** What a SQL failure means for the request that met it. */
export type Verdict = "unavailable" | "retry" | "defect"

interface Entry {
  readonly verdict: Verdict
  /** Why, in one line. */
  readonly why: string
}

/**
 * Verdicts by SQLSTATE: a five-character code, or a two-character class for every code in it. An exact code wins
 * over its class; a SQLSTATE in neither is a defect.
 */
export const sqlStateVerdicts: Readonly<Record<string, Entry>> = {
  "08": { verdict: "unavailable", why: "connection exception: the connection failed, was refused or was lost" },
  "25006": { verdict: "unavailable", why: "read-only transaction: we reached a standby (a failover is under way)" },
  "28": { verdict: "unavailable", why: "invalid authorization: the server refuses our role until an operator fixes it" },
  "40001": { verdict: "retry", why: "serialization failure: the transaction runs again" },
  "40P01": { verdict: "retry", why: "deadlock detected: the transaction runs again" },
  "42501": { verdict: "unavailable", why: "insufficient privilege: our role lacks a grant until an operator fixes it" },
  "53": { verdict: "unavailable", why: "insufficient resources: too many connections (53300), disk full (53100), out of memory (53200)" },
  "55P03": { verdict: "unavailable", why: "lock not available: lock_timeout ran out while another session held the lock" },
  "57014": { verdict: "unavailable", why: "query canceled: statement_timeout ran out or an operator canceled it" },
  "57P01": { verdict: "unavailable", why: "admin shutdown: the server is stopping" },
  "57P02": { verdict: "unavailable", why: "crash shutdown: the server is restarting after a crash" },
  "57P03": { verdict: "unavailable", why: "cannot connect now: the server is starting up or recovering" },
  "57P05": { verdict: "unavailable", why: "idle session timeout: the server closed an idle connection; a new one serves" },
  "58": { verdict: "unavailable", why: "system error: the server's operating system or disk failed (I/O error)" },
  "XX": { verdict: "defect", why: "internal error or corruption: needs an operator, with the whole cause logged" }
}

/** Verdicts by reason, for a failure without a SQLSTATE (the client's own); any other reason is a defect. */
export const reasonVerdicts: Readonly<Partial<Record<SqlError["reason"]["_tag"], Entry>>> = {
  ConnectionError: { verdict: "unavailable", why: "the server could not be reached: refused, reset, closed or timed out" },
  AuthenticationError: { verdict: "unavailable", why: "the client could not authenticate (no password configured, SCRAM failed)" }
}

const defect: Entry = { verdict: "defect", why: "anything else is a bug: a 500 with its cause logged" }

/** `code` on a server-reported failure: five digits or upper-case letters, next to the response's `severity`. */
const sqlStatePattern = /^[0-9A-Z]{5}$/

/** The SQLSTATE of a failure the server reported, or `undefined` for a failure of the client itself. */
export const sqlStateOf = (error: SqlError): string | undefined => {
  const cause: unknown = error.reason.cause
  if (typeof cause !== "object" || cause === null || !("code" in cause) || !("severity" in cause)) return undefined
  return typeof cause.code === "string" && sqlStatePattern.test(cause.code) ? cause.code : undefined
}

/** The verdict on a SQL failure, and why. */
export const classify = (error: SqlError): Entry => {
  const state = sqlStateOf(error)
  if (state === undefined) return reasonVerdicts[error.reason._tag] ?? defect
  return sqlStateVerdicts[state] ?? sqlStateVerdicts[state.slice(0, 2)] ?? defect
}

/**
 * The failure in one line for operators: the client's message, then the server's own message and its SQLSTATE
 * when it reported one, e.g. `PgConnection: Failed to connect: sorry, too many clients already (SQLSTATE 53300)`.
 */
export const describe = (error: SqlError): string => {
  const state = sqlStateOf(error)
  const cause: unknown = error.reason.cause
  const serverMessage = state !== undefined && cause instanceof Error ? `: ${cause.message}` : ""
  return `${error.message}${serverMessage}${state === undefined ? "" : ` (SQLSTATE ${state})`}`
}
