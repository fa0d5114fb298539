/**
 * The wire shapes of the contract's objects (snake_case, ISO 8601 times with `Z`) and the mapping from the
 * domain's values (camelCase, epoch milliseconds). Handlers stay thin: they call a domain service and hand
 * its result to one of these functions.
 */
import { Schema } from "effect"
import type { ApiKey, Component, Generator, LicenseDetail, LicenseView, Machine } from "@lm/domain"

const Time = Schema.String.annotate({ description: "ISO 8601 UTC time, e.g. `2026-01-31T12:00:00.000Z`." })
const NullableTime = Schema.NullOr(Time)
const NullableInt = Schema.NullOr(Schema.Int)
const Json = Schema.Record(Schema.String, Schema.Json)

/** Epoch milliseconds as ISO 8601 with `Z`. */
export const iso = (millis: number): string => new Date(millis).toISOString()
export const isoOrNull = (millis: number | null): string | null => (millis === null ? null : iso(millis))

export const ComponentWire = Schema.Struct({
  id: Schema.Int,
  kind: Schema.String,
  fingerprint: Schema.String,
  name: Schema.NullOr(Schema.String)
})

export const MachineWire = Schema.Struct({
  id: Schema.Int,
  license_id: Schema.Int,
  fingerprint: Schema.String,
  name: Schema.NullOr(Schema.String),
  hostname: Schema.NullOr(Schema.String),
  platform: Schema.NullOr(Schema.String),
  app_version: Schema.NullOr(Schema.String),
  ip_address: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "inactive", "revoked"]),
  activated_at: Time,
  deactivated_at: NullableTime,
  deactivation_reason: Schema.NullOr(Schema.String),
  last_heartbeat_at: NullableTime,
  lease_expires_at: NullableTime,
  meta: Json,
  components: Schema.Array(ComponentWire),
  created_at: Time
})
export type MachineWire = typeof MachineWire.Type

const componentToWire = (c: Component) => ({ id: c.id, kind: c.kind, fingerprint: c.fingerprint, name: c.name })

/** A machine on the wire. */
export const machineToWire = (m: Machine): MachineWire => ({
  id: m.id,
  license_id: m.licenseId,
  fingerprint: m.fingerprint,
  name: m.name,
  hostname: m.hostname,
  platform: m.platform,
  app_version: m.appVersion,
  ip_address: m.ipAddress,
  status: m.status,
  activated_at: iso(m.activatedAt),
  deactivated_at: isoOrNull(m.deactivatedAt),
  deactivation_reason: m.deactivationReason,
  last_heartbeat_at: isoOrNull(m.lastHeartbeatAt),
  lease_expires_at: isoOrNull(m.leaseExpiresAt),
  meta: m.meta,
  components: m.components.map(componentToWire),
  created_at: iso(m.createdAt)
})

const licenseFields = {
  id: Schema.Int,
  license_key: Schema.String,
  status: Schema.Literals(["pending", "inactive", "active", "expired", "suspended", "revoked", "terminated"]),
  product_id: NullableInt,
  order_id: NullableInt,
  user_id: NullableInt,
  max_activations: NullableInt,
  activation_count: Schema.Int,
  overage_strategy: Schema.Literals(["deny", "allow_1_25x", "allow_1_5x", "allow_2x"]),
  is_floating: Schema.Boolean,
  lease_duration: Schema.Int,
  require_heartbeat: Schema.Boolean,
  heartbeat_interval: Schema.Int,
  valid_for_days: NullableInt,
  expires_at: NullableTime,
  grace_days: Schema.Int,
  activated_at: NullableTime,
  source: Schema.Literals(["api", "generator", "pool", "import"]),
  generator_id: NullableInt,
  subscription_id: NullableInt,
  meta: Json,
  created_at: Time,
  updated_at: Time
}

export const LicenseWire = Schema.Struct(licenseFields)
export type LicenseWire = typeof LicenseWire.Type

/** A license with its machines (GET /licenses/{key}). */
export const LicenseDetailWire = Schema.Struct({ ...licenseFields, machines: Schema.Array(MachineWire) })
export type LicenseDetailWire = typeof LicenseDetailWire.Type

/** A license as it reports itself now. */
export const licenseToWire = ({ license: l, status, activationCount }: LicenseView): LicenseWire => ({
  id: l.id,
  license_key: l.key,
  status,
  product_id: l.productId,
  order_id: l.orderId,
  user_id: l.userId,
  max_activations: l.maxActivations,
  activation_count: activationCount,
  overage_strategy: l.overageStrategy,
  is_floating: l.isFloating,
  lease_duration: l.leaseDuration,
  require_heartbeat: l.requireHeartbeat,
  heartbeat_interval: l.heartbeatInterval,
  valid_for_days: l.validForDays,
  expires_at: isoOrNull(l.expiresAt),
  grace_days: l.graceDays,
  activated_at: isoOrNull(l.activatedAt),
  source: l.source,
  generator_id: l.generatorId,
  subscription_id: l.subscriptionId,
  meta: l.meta,
  created_at: iso(l.createdAt),
  updated_at: iso(l.updatedAt)
})

export const licenseDetailToWire = (detail: LicenseDetail): LicenseDetailWire => ({
  ...licenseToWire(detail),
  machines: detail.machines.map(machineToWire)
})

export const GeneratorWire = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  charset: Schema.String,
  chunk_length: Schema.Int,
  prefix: Schema.String,
  product_id: NullableInt,
  default_max_activations: NullableInt,
  default_valid_days: NullableInt,
  default_overage_strategy: Schema.NullOr(Schema.String),
  default_is_floating: Schema.NullOr(Schema.Boolean),
  pool_size: Schema.Int,
  created_at: Time,
  updated_at: Time
})
export type GeneratorWire = typeof GeneratorWire.Type

export const generatorToWire = ({ generator: g, poolSize }: { readonly generator: Generator; readonly poolSize: number }): GeneratorWire => ({
  id: g.id,
  name: g.name,
  charset: g.charset,
  chunk_length: g.chunkLength,
  prefix: g.prefix,
  product_id: g.productId,
  default_max_activations: g.defaultMaxActivations,
  default_valid_days: g.defaultValidDays,
  default_overage_strategy: g.defaultOverageStrategy,
  default_is_floating: g.defaultIsFloating,
  pool_size: poolSize,
  created_at: iso(g.createdAt),
  updated_at: iso(g.updatedAt)
})

export const ApiKeyWire = Schema.Struct({
  id: Schema.Int,
  description: Schema.String,
  scope: Schema.Literals(["read", "write", "read_write"]),
  truncated_key: Schema.String,
  created_at: Time,
  last_access_at: NullableTime
})
export type ApiKeyWire = typeof ApiKeyWire.Type

export const apiKeyToWire = (k: ApiKey): ApiKeyWire => ({
  id: k.id,
  description: k.description,
  scope: k.scope,
  truncated_key: k.truncatedKey,
  created_at: iso(k.createdAt),
  last_access_at: isoOrNull(k.lastAccessAt)
})

/** The `meta` of a list: total, page, per_page and total_pages (0 when total is 0). */
export const ListMeta = Schema.Struct({ total: Schema.Int, page: Schema.Int, per_page: Schema.Int, total_pages: Schema.Int })
export type ListMeta = typeof ListMeta.Type

export const listMeta = (total: number, page: number, perPage: number): ListMeta => ({
  total,
  page,
  per_page: perPage,
  total_pages: total === 0 ? 0 : Math.ceil(total / perPage)
})
