/** Mapping between SQL rows (snake_case, Date, bigint) and the domain's values (camelCase, epoch ms, number). */
import { Effect } from "effect"
import { Errors } from "@lm/domain"
import type { Model } from "@lm/domain"
import type { SqlError } from "effect/sql/SqlError"

type Row = Record<string, unknown>

/** A `timestamptz` or `bigint` cell as epoch milliseconds. */
export const millis = (value: unknown): number => (value instanceof Date ? value.getTime() : Number(value))
export const millisOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : millis(value))
export const num = (value: unknown): number => Number(value)
export const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value))
export const strOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value))
/** Epoch milliseconds as a parameter for a `timestamptz` column. */
export const date = (value: number | null): Date | null => (value === null ? null : new Date(value))
const json = (value: unknown): any => (typeof value === "string" ? JSON.parse(value) : value)

export const toLicense = (row: Row): Model.License => ({
  id: num(row.id),
  key: row.key as string,
  state: row.state as Model.License["state"],
  productId: numOrNull(row.product_id),
  orderId: numOrNull(row.order_id),
  userId: numOrNull(row.user_id),
  maxActivations: numOrNull(row.max_activations),
  overageStrategy: row.overage_strategy as Model.License["overageStrategy"],
  isFloating: row.is_floating as boolean,
  leaseDuration: num(row.lease_duration),
  requireHeartbeat: row.require_heartbeat as boolean,
  heartbeatInterval: num(row.heartbeat_interval),
  validForDays: numOrNull(row.valid_for_days),
  expiresAt: millisOrNull(row.expires_at),
  graceDays: num(row.grace_days),
  activatedAt: millisOrNull(row.activated_at),
  source: row.source as Model.License["source"],
  generatorId: numOrNull(row.generator_id),
  subscriptionId: numOrNull(row.subscription_id),
  meta: json(row.meta) ?? {},
  createdAt: millis(row.created_at),
  updatedAt: millis(row.updated_at),
  revision: num(row.revision)
})

export const toComponent = (value: Row): Model.Component => ({
  id: num(value.id),
  kind: value.kind as Model.Component["kind"],
  fingerprint: value.fingerprint as string,
  name: strOrNull(value.name)
})

export const toMachine = (row: Row): Model.Machine => ({
  id: num(row.id),
  licenseId: num(row.license_id),
  fingerprint: row.fingerprint as string,
  name: strOrNull(row.name),
  hostname: strOrNull(row.hostname),
  platform: strOrNull(row.platform),
  appVersion: strOrNull(row.app_version),
  ipAddress: strOrNull(row.ip_address),
  status: row.status as Model.Machine["status"],
  activatedAt: millis(row.activated_at),
  deactivatedAt: millisOrNull(row.deactivated_at),
  deactivationReason: (row.deactivation_reason ?? null) as Model.Machine["deactivationReason"],
  lastHeartbeatAt: millisOrNull(row.last_heartbeat_at),
  leaseExpiresAt: millisOrNull(row.lease_expires_at),
  seatDeadline: millisOrNull(row.seat_deadline),
  meta: json(row.meta) ?? {},
  components: ((json(row.components) ?? []) as Array<Row>).map(toComponent),
  createdAt: millis(row.created_at)
})

export const toGenerator = (row: Row): Model.Generator => ({
  id: num(row.id),
  name: row.name as string,
  charset: row.charset as string,
  chunkLength: num(row.chunk_length),
  prefix: row.prefix as string,
  productId: numOrNull(row.product_id),
  defaultMaxActivations: numOrNull(row.default_max_activations),
  defaultValidDays: numOrNull(row.default_valid_days),
  defaultOverageStrategy: (row.default_overage_strategy ?? null) as Model.Generator["defaultOverageStrategy"],
  defaultIsFloating: (row.default_is_floating ?? null) as boolean | null,
  createdAt: millis(row.created_at),
  updatedAt: millis(row.updated_at)
})

export const toApiKey = (row: Row): Model.ApiKey => ({
  id: num(row.id),
  description: row.description as string,
  scope: row.scope as Model.ApiKey["scope"],
  consumerKeyHash: row.consumer_key_hash as string,
  consumerSecretHash: row.consumer_secret_hash as string,
  truncatedKey: row.truncated_key as string,
  createdAt: millis(row.created_at),
  lastAccessAt: millisOrNull(row.last_access_at)
})

const unavailableReasons = new Set([
  "ConnectionError",
  "AuthenticationError",
  "AuthorizationError",
  "LockTimeoutError",
  "StatementTimeoutError"
])

/** Whether a SQL failure means the store cannot be reached or used now (as opposed to a bug). */
export const isUnavailable = (error: SqlError): boolean => unavailableReasons.has(error.reason._tag)

/**
 * How long one store call (or one whole transaction) may take before it is answered as unavailable. A server
 * that stops answering without closing its connections would otherwise hold the request forever.
 */
export const STORE_CALL_TIMEOUT = "15 seconds"

const timedOut = () =>
  Effect.fail(new Errors.StorageUnavailable({ message: `The store did not answer within ${STORE_CALL_TIMEOUT}.` }))

/**
 * Turns SQL failures into the domain's `StorageUnavailable` when the store cannot be reached or does not answer
 * in time; any other SQL failure is a defect (a 500 with the cause logged), never a silently swallowed error.
 */
export const orUnavailable = <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | Errors.StorageUnavailable, R> =>
  Effect.catchIf(
    effect,
    (error): error is SqlError => (error as { readonly _tag?: string })?._tag === "SqlError",
    (error) =>
      isUnavailable(error)
        ? Effect.fail(new Errors.StorageUnavailable({ message: `The store is unavailable: ${error.message}` }))
        : Effect.die(error)
  ).pipe(Effect.timeoutOrElse({ duration: STORE_CALL_TIMEOUT, orElse: timedOut })) as any
