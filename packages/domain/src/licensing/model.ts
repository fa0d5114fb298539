/**
 * The licensing feature's records: licenses, machines (devices) and their components, the names of the events
 * their transitions cause, and which of those change the certificate revocation list.
 */
import { Schema } from "effect"
import { type DomainEvent, Id, Meta, Millis } from "../shared/model.js"

/** How far a license may exceed its seat limit: not at all, or up to 1.25, 1.5 or 2 times it. */
export const overageStrategies = ["deny", "allow_1_25x", "allow_1_5x", "allow_2x"] as const
export const OverageStrategy = Schema.Literals(overageStrategies)
export type OverageStrategy = typeof OverageStrategy.Type

/** How a license was created. */
export const licenseSources = ["api", "generator", "pool", "import"] as const
export const LicenseSource = Schema.Literals(licenseSources)
export type LicenseSource = typeof LicenseSource.Type

/**
 * The part of a license's status that actions set and the store keeps. `issued` is a normal license whose
 * reported status (`active`, `inactive`, `expired`) is derived from its machines and the clock.
 */
export const licenseStates = ["pending", "issued", "suspended", "revoked", "terminated"] as const
export const LicenseState = Schema.Literals(licenseStates)
export type LicenseState = typeof LicenseState.Type

/**
 * Who holds a suspended license's suspension: an administrator (POST suspend) or its subscription (on-hold).
 * A subscription lifts only its own suspension, never an administrator's; null when the license is not suspended.
 */
export const suspenders = ["administrator", "subscription"] as const
export const SuspendedBy = Schema.NullOr(Schema.Literals(suspenders))
export type SuspendedBy = typeof SuspendedBy.Type

/** The status a license reports, always as it is now (CONTRACT §3). */
export const licenseStatuses = ["pending", "inactive", "active", "expired", "suspended", "revoked", "terminated"] as const
export const LicenseStatus = Schema.Literals(licenseStatuses)
export type LicenseStatus = typeof LicenseStatus.Type

/** The settings of a license that PUT may change and a create may set. */
export const LicenseSettings = Schema.Struct({
  productId: Schema.NullOr(Id),
  orderId: Schema.NullOr(Id),
  userId: Schema.NullOr(Id),
  maxActivations: Schema.NullOr(Schema.Int),
  overageStrategy: OverageStrategy,
  isFloating: Schema.Boolean,
  leaseDuration: Schema.Int,
  requireHeartbeat: Schema.Boolean,
  heartbeatInterval: Schema.Int,
  validForDays: Schema.NullOr(Schema.Int),
  expiresAt: Schema.NullOr(Millis),
  graceDays: Schema.Int,
  meta: Meta,
  /** The policy (plan) the license was made from or moved to, or null (CONTRACT §15). */
  policyId: Schema.NullOr(Id),
  /** The license's own entitlement codes, sorted; its effective ones add its policy's (`policies/entitlements.ts`). */
  entitlements: Schema.Array(Schema.String)
})
export type LicenseSettings = typeof LicenseSettings.Type

export const License = Schema.Struct({
  id: Id,
  key: Schema.String,
  state: LicenseState,
  ...LicenseSettings.fields,
  activatedAt: Schema.NullOr(Millis),
  source: LicenseSource,
  generatorId: Schema.NullOr(Id),
  subscriptionId: Schema.NullOr(Id),
  suspendedBy: SuspendedBy,
  createdAt: Millis,
  updatedAt: Millis,
  /** Grows on every write; lets caches tell a stale copy from a fresh one. */
  revision: Schema.Int
})
export type License = typeof License.Type

/** A license before the store gives it an id. */
export type LicenseDraft = Omit<License, "id" | "revision">

/** The columns a license list may be sorted by (ties are broken by id). */
export const licenseSortColumns = ["id", "created_at", "expires_at"] as const
export type LicenseSortColumn = (typeof licenseSortColumns)[number]

/** A machine's stored status: `active` holds a seat while its lease and heartbeat are live. */
export const machineStatuses = ["active", "inactive", "revoked"] as const
export const MachineStatus = Schema.Literals(machineStatuses)
export type MachineStatus = typeof MachineStatus.Type

/** Why a machine was deactivated. */
export const deactivationReasons = ["client", "admin", "heartbeat_dead", "lease_expired", "license_terminated"] as const
export const DeactivationReason = Schema.Literals(deactivationReasons)
export type DeactivationReason = typeof DeactivationReason.Type

/** The kinds of hardware component a client may report. */
export const componentKinds = ["cpu", "motherboard", "disk", "mac", "gpu", "custom"] as const
export const ComponentKind = Schema.Literals(componentKinds)
export type ComponentKind = typeof ComponentKind.Type

export const Component = Schema.Struct({
  id: Id,
  kind: ComponentKind,
  fingerprint: Schema.String,
  name: Schema.NullOr(Schema.String)
})
export type Component = typeof Component.Type
export type ComponentDraft = Omit<Component, "id">

export const Machine = Schema.Struct({
  id: Id,
  licenseId: Id,
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

/** A device fingerprint (a machine's or a component's): 1 to 255 characters, none a control character (Cc). */
export const fingerprintRule = { maxLength: 255, pattern: /^[^\u0000-\u001f\u007f-\u009f]*$/ } as const

/** Whether a text is a fingerprint by {@link fingerprintRule}. */
export const isFingerprint = (text: string): boolean =>
  text.length >= 1 && text.length <= fingerprintRule.maxLength && fingerprintRule.pattern.test(text)

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

/** What an entitlement code looks like: a lower-case letter or digit, then up to 63 of `a-z0-9_.:-`. */
export const entitlementCodePattern = /^[a-z0-9][a-z0-9_.:-]{0,63}$/

/** The most entitlement codes one policy, license or release carries. */
export const MAX_ENTITLEMENTS = 64

/** A set of entitlement codes, sorted and without repeats (the domain keeps it so on every write). */
export const Entitlements = Schema.Array(Schema.String)
export type Entitlements = typeof Entitlements.Type

/**
 * A policy (CONTRACT §15): a named plan — the license settings a product tier gets and the entitlement codes it
 * unlocks. The policies feature manages them; licensing reads them (a license's policy gives it defaults when it is
 * created with it or moved to it, and its codes are live in validation).
 */
/** A policy: a name, an optional product, the license settings it gives, and its entitlement codes. */
export const Policy = Schema.Struct({
  id: Id,
  name: Schema.String,
  productId: Schema.NullOr(Id),
  entitlements: Entitlements,
  maxActivations: Schema.NullOr(Schema.Int),
  overageStrategy: OverageStrategy,
  isFloating: Schema.Boolean,
  leaseDuration: Schema.Int,
  requireHeartbeat: Schema.Boolean,
  heartbeatInterval: Schema.Int,
  validForDays: Schema.NullOr(Schema.Int),
  graceDays: Schema.Int,
  createdAt: Millis,
  updatedAt: Millis
})
export type Policy = typeof Policy.Type
export type PolicyDraft = Omit<Policy, "id">

/** The license settings a policy carries (the License fields of the same names), copied into its licenses. */
export const policySettingNames = [
  "maxActivations",
  "overageStrategy",
  "isFloating",
  "leaseDuration",
  "requireHeartbeat",
  "heartbeatInterval",
  "validForDays",
  "graceDays"
] as const satisfies ReadonlyArray<keyof Policy>
export type PolicySettings = Pick<Policy, (typeof policySettingNames)[number]>

/** The alphabet of minted keys when no generator gives one: A-Z and 2-9 without I, O, 0 and 1. */
export const DEFAULT_CHARSET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

/** Names of the license and machine events of CONTRACT §11. */
export const licensingEventTypes = [
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
  "machine.lease_expired"
] as const
export type LicensingEventType = (typeof licensingEventTypes)[number]

/** Events that change what the certificate revocation list lists; each one advances its `seq`. */
export const revocationEventTypes: ReadonlySet<string> = new Set<LicensingEventType>([
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
