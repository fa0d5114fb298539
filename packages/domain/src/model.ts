/**
 * The licensing domain's data: licenses, machines, generators, API keys, signing keys and the events
 * their transitions cause. Times are epoch milliseconds (UTC); the HTTP adapter writes them as ISO 8601.
 * Durations are whole seconds, as on the wire.
 */
import { Schema } from "effect"

/** Epoch milliseconds. */
export const Millis = Schema.Number
/** A JSON object of free-form metadata. */
export const Meta = Schema.Record(Schema.String, Schema.Json)
export type Meta = typeof Meta.Type

export const OverageStrategy = Schema.Literals(["deny", "allow_1_25x", "allow_1_5x", "allow_2x"])
export type OverageStrategy = typeof OverageStrategy.Type

/** How a license was created. */
export const LicenseSource = Schema.Literals(["api", "generator", "pool", "import"])
export type LicenseSource = typeof LicenseSource.Type

/**
 * The part of a license's status that actions set and the store keeps. `issued` is a normal license whose
 * reported status (`active`, `inactive`, `expired`) is derived from its machines and the clock.
 */
export const LicenseState = Schema.Literals(["pending", "issued", "suspended", "revoked", "terminated"])
export type LicenseState = typeof LicenseState.Type

/** The status a license reports, always as it is now (CONTRACT §3). */
export const LicenseStatus = Schema.Literals(["pending", "inactive", "active", "expired", "suspended", "revoked", "terminated"])
export type LicenseStatus = typeof LicenseStatus.Type

/** The settings of a license that PUT may change and a create may set. */
export const LicenseSettings = Schema.Struct({
  productId: Schema.NullOr(Schema.Int),
  orderId: Schema.NullOr(Schema.Int),
  userId: Schema.NullOr(Schema.Int),
  maxActivations: Schema.NullOr(Schema.Int),
  overageStrategy: OverageStrategy,
  isFloating: Schema.Boolean,
  leaseDuration: Schema.Int,
  requireHeartbeat: Schema.Boolean,
  heartbeatInterval: Schema.Int,
  validForDays: Schema.NullOr(Schema.Int),
  expiresAt: Schema.NullOr(Millis),
  graceDays: Schema.Int,
  meta: Meta
})
export type LicenseSettings = typeof LicenseSettings.Type

export const License = Schema.Struct({
  id: Schema.Int,
  key: Schema.String,
  state: LicenseState,
  ...LicenseSettings.fields,
  activatedAt: Schema.NullOr(Millis),
  source: LicenseSource,
  generatorId: Schema.NullOr(Schema.Int),
  subscriptionId: Schema.NullOr(Schema.Int),
  createdAt: Millis,
  updatedAt: Millis,
  /** Grows on every write; lets caches tell a stale copy from a fresh one. */
  revision: Schema.Int
})
export type License = typeof License.Type

/** A license before the store gives it an id. */
export type LicenseDraft = Omit<License, "id" | "revision">

export const MachineStatus = Schema.Literals(["active", "inactive", "revoked"])
export type MachineStatus = typeof MachineStatus.Type

export const DeactivationReason = Schema.Literals(["client", "admin", "heartbeat_dead", "lease_expired", "license_terminated"])
export type DeactivationReason = typeof DeactivationReason.Type

export const ComponentKind = Schema.Literals(["cpu", "motherboard", "disk", "mac", "gpu", "custom"])
export type ComponentKind = typeof ComponentKind.Type

export const Component = Schema.Struct({
  id: Schema.Int,
  kind: ComponentKind,
  fingerprint: Schema.String,
  name: Schema.NullOr(Schema.String)
})
export type Component = typeof Component.Type
export type ComponentDraft = Omit<Component, "id">

export const Machine = Schema.Struct({
  id: Schema.Int,
  licenseId: Schema.Int,
  fingerprint: Schema.String,
  name: Schema.NullOr(Schema.String),
  hostname: Schema.NullOr(Schema.String),
  platform: Schema.NullOr(Schema.String),
  appVersion: Schema.NullOr(Schema.String),
  ipAddress: Schema.NullOr(Schema.String),
  status: MachineStatus,
  activatedAt: Millis,
  deactivatedAt: Schema.NullOr(Millis),
  deactivationReason: Schema.NullOr(DeactivationReason),
  lastHeartbeatAt: Schema.NullOr(Millis),
  leaseExpiresAt: Schema.NullOr(Millis),
  /**
   * When this machine stops holding a seat unless it beats again (the earlier of its lease end and its
   * heartbeat deadline), or null. Kept by the domain on every write; the sweep uses it as an index only,
   * and re-checks with `holdsSeat` before acting.
   */
  seatDeadline: Schema.NullOr(Millis),
  meta: Meta,
  components: Schema.Array(Component),
  createdAt: Millis
})
export type Machine = typeof Machine.Type
export type MachineDraft = Omit<Machine, "id" | "components"> & { readonly components: ReadonlyArray<ComponentDraft> }

/** Facts a client sends about itself when it activates or beats. */
export interface MachineFacts {
  readonly fingerprint: string
  readonly name?: string | null | undefined
  readonly hostname?: string | null | undefined
  readonly platform?: string | null | undefined
  readonly appVersion?: string | null | undefined
  readonly ipAddress?: string | null | undefined
  readonly meta?: Meta | undefined
  readonly components?: ReadonlyArray<ComponentDraft> | undefined
}

export const DEFAULT_CHARSET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

export const Generator = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  charset: Schema.String,
  chunkLength: Schema.Int,
  prefix: Schema.String,
  productId: Schema.NullOr(Schema.Int),
  defaultMaxActivations: Schema.NullOr(Schema.Int),
  defaultValidDays: Schema.NullOr(Schema.Int),
  defaultOverageStrategy: Schema.NullOr(OverageStrategy),
  defaultIsFloating: Schema.NullOr(Schema.Boolean),
  createdAt: Millis,
  updatedAt: Millis
})
export type Generator = typeof Generator.Type
export type GeneratorDraft = Omit<Generator, "id">

export const ApiKeyScope = Schema.Literals(["read", "write", "read_write"])
export type ApiKeyScope = typeof ApiKeyScope.Type

/** A stored API key: only SHA-256 hashes of the consumer key and secret are kept. */
export const ApiKey = Schema.Struct({
  id: Schema.Int,
  description: Schema.String,
  scope: ApiKeyScope,
  consumerKeyHash: Schema.String,
  consumerSecretHash: Schema.String,
  truncatedKey: Schema.String,
  createdAt: Millis,
  lastAccessAt: Schema.NullOr(Millis)
})
export type ApiKey = typeof ApiKey.Type
export type ApiKeyDraft = Omit<ApiKey, "id">

/** An Ed25519 signing key as the store keeps it: the 32-byte seed and the raw public key, base64. */
export interface StoredSigningKey {
  readonly kid: string
  readonly seed: string
  readonly publicKey: string
  readonly current: boolean
  readonly createdAt: number
}

/** Names of the events of CONTRACT §11 that the licensing core causes. */
export const EventType = Schema.Literals([
  "license.created",
  "license.updated",
  "license.deleted",
  "license.renewed",
  "license.suspended",
  "license.revoked",
  "license.reinstated",
  "license.terminated",
  "license.expired",
  "machine.activated",
  "machine.deactivated",
  "machine.revoked",
  "machine.culled",
  "machine.lease_expired",
  "generator.keys_generated"
])
export type EventType = typeof EventType.Type

/** A domain event, written to the outbox in the same transaction as the change it describes. */
export interface DomainEvent {
  readonly type: EventType
  readonly occurredAt: number
  readonly licenseId: number | null
  readonly machineId: number | null
  readonly data: Record<string, unknown>
}

/** What a client call was, for the event log (analytics). */
export const ActivityKind = Schema.Literals(["validate", "activate", "deactivate", "heartbeat"])
export type ActivityKind = typeof ActivityKind.Type

/** One line of the event log: every validate, activate, deactivate, heartbeat and refusal. */
export interface ActivityEntry {
  readonly kind: ActivityKind
  readonly licenseId: number | null
  readonly licenseKey: string
  readonly machineId: number | null
  readonly fingerprint: string | null
  readonly ipAddress: string | null
  readonly appVersion: string | null
  /** `valid`, `activated`, a refusal code, ... */
  readonly result: string
  readonly at: number
}

/** Events that change what the certificate revocation list lists; each one advances its `seq`. */
export const revocationEventTypes: ReadonlySet<EventType> = new Set<EventType>([
  "license.suspended",
  "license.revoked",
  "license.reinstated",
  "license.terminated",
  "license.deleted",
  "machine.revoked"
])

/** Whether appending these events changes the revocation list. */
export const affectsRevocationList = (events: ReadonlyArray<DomainEvent>): boolean =>
  events.some((event) => revocationEventTypes.has(event.type))
