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

// Each list of names below is written once, as a tuple; its Schema and type derive from it, and the HTTP
// adapter's wire schemas, the CLI and the settings refer to these (the OpenAPI document lists the same values).

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

/** The directions a list may be sorted in. */
export const sortDirections = ["asc", "desc"] as const
export type SortDirection = (typeof sortDirections)[number]

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

/** What an API key may do: `read` allows GET, `write` allows POST/PUT/PATCH/DELETE, `read_write` both. */
export const apiKeyScopes = ["read", "write", "read_write"] as const
export const ApiKeyScope = Schema.Literals(apiKeyScopes)
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

/** Names of the license, machine, generator, anomaly and release events of CONTRACT §11. */
const licensingEventTypes = [
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
  "generator.keys_generated",
  "anomaly.detected",
  "release.published"
] as const

/** Names of the subscription events of CONTRACT §11 (CONTRACT §10's moves). */
export const subscriptionEventTypes = [
  "subscription.created",
  "subscription.updated",
  "subscription.paused",
  "subscription.resumed",
  "subscription.cancelled",
  "subscription.switched",
  "subscription.renewed",
  "subscription.payment_failed",
  "subscription.expired"
] as const
export type SubscriptionEventType = (typeof subscriptionEventTypes)[number]

/**
 * Names of the events about webhooks themselves that the core writes to the outbox: `webhook.disabled` (a webhook
 * whose deliveries all failed for a day) is an addition to CONTRACT §11's list.
 */
const webhookOutboxEventTypes = ["webhook.disabled"] as const

/** Names of the events of CONTRACT §11 that the core causes (and writes to the outbox). */
export const eventTypes = [...licensingEventTypes, ...subscriptionEventTypes, ...webhookOutboxEventTypes] as const
export const EventType = Schema.Literals(eventTypes)
export type EventType = typeof EventType.Type

/**
 * The events a webhook may subscribe to: the contract's whole list (CONTRACT §11). `*` subscribes to every one.
 */
export const webhookEventTypes = [...eventTypes, "webhook.ping"] as const
export const WebhookEventType = Schema.Literals(webhookEventTypes)
export type WebhookEventType = typeof WebhookEventType.Type

/** The subscription to every event. */
export const allWebhookEvents = "*"

/** A webhook's status: a `disabled` one receives nothing until it is re-enabled. */
export const webhookStatuses = ["active", "disabled"] as const
export const WebhookStatus = Schema.Literals(webhookStatuses)
export type WebhookStatus = typeof WebhookStatus.Type

/** A registered webhook. The store keeps its secret sealed with the master key (never in clear). */
export const Webhook = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  url: Schema.String,
  /** Event names, or `["*"]`. */
  events: Schema.Array(Schema.String),
  status: WebhookStatus,
  /** The signing secret, sealed with the master key. */
  sealedSecret: Schema.String,
  /** Since when every delivery attempt has failed (null after a success); a day of it disables the webhook. */
  failingSince: Schema.NullOr(Millis),
  createdAt: Millis,
  updatedAt: Millis
})
export type Webhook = typeof Webhook.Type
export type WebhookDraft = Omit<Webhook, "id">

/** A delivery's status: `pending` until an attempt succeeds (`delivered`) or the retries run out (`failed`). */
export const deliveryStatuses = ["pending", "delivered", "failed"] as const
export const DeliveryStatus = Schema.Literals(deliveryStatuses)
export type DeliveryStatus = typeof DeliveryStatus.Type

/** One event to deliver to one webhook, with the outcome of its latest attempt. */
export const WebhookDelivery = Schema.Struct({
  id: Schema.Int,
  webhookId: Schema.Int,
  eventId: Schema.Int,
  type: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  responseStatus: Schema.NullOr(Schema.Int),
  /** The start of the last response's body (at most 1 KiB), or why the attempt failed without one. */
  responseExcerpt: Schema.NullOr(Schema.String),
  lastAttemptAt: Schema.NullOr(Millis),
  nextAttemptAt: Schema.NullOr(Millis),
  /** Until when a worker holds the delivery (a crashed worker's claim lapses then). */
  lockedUntil: Schema.NullOr(Millis),
  createdAt: Millis
})
export type WebhookDelivery = typeof WebhookDelivery.Type
export type WebhookDeliveryDraft = Omit<WebhookDelivery, "id">

/**
 * Release channels, most stable first (CONTRACT §9). A client on a channel also sees the more stable ones (those
 * before it here).
 */
export const releaseChannels = ["stable", "rc", "beta", "alpha", "dev"] as const
export const ReleaseChannel = Schema.Literals(releaseChannels)
export type ReleaseChannel = typeof ReleaseChannel.Type

/** A published version of a product, with its artifact (uploaded to the artifact store, or hosted elsewhere). */
export const Release = Schema.Struct({
  id: Schema.Int,
  productId: Schema.Int,
  /** Strict semver, as given. */
  version: Schema.String,
  /**
   * A text whose byte order is semver precedence (see `release.ts`, `versionSortKey`). Kept by the domain on
   * every write; stores order by it (byte-wise) and never parse versions.
   */
  versionKey: Schema.String,
  channel: ReleaseChannel,
  changelog: Schema.NullOr(Schema.String),
  minAppVersion: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  size: Schema.NullOr(Schema.Number),
  /** Lowercase hex SHA-256 of the artifact's bytes (null for an external artifact not described). */
  sha256: Schema.NullOr(Schema.String),
  contentType: Schema.NullOr(Schema.String),
  /** Where an external artifact is hosted; null for an uploaded one. */
  artifactUrl: Schema.NullOr(Schema.String),
  /** The artifact store's key of an uploaded artifact; null for an external one. */
  artifactKey: Schema.NullOr(Schema.String),
  releasedAt: Millis,
  createdAt: Millis
})
export type Release = typeof Release.Type
export type ReleaseDraft = Omit<Release, "id">

/** A domain event, written to the outbox in the same transaction as the change it describes. */
export interface DomainEvent {
  readonly type: EventType
  readonly occurredAt: number
  readonly licenseId: number | null
  readonly machineId: number | null
  readonly data: Record<string, unknown>
}

/** An event as the outbox holds it, with its id. */
export type StoredEvent = DomainEvent & { readonly id: number }

/** What a client call was, for the event log (analytics). */
export const activityKinds = ["validate", "activate", "deactivate", "heartbeat", "download"] as const
export const ActivityKind = Schema.Literals(activityKinds)
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
  /** The product of the license found, when one was (the analytics filter on it); absent counts as none. */
  readonly productId?: number | null | undefined
}

/** The periods of GET /analytics/overview (CONTRACT §11). */
export const analyticsPeriods = ["7d", "30d", "90d"] as const
export const AnalyticsPeriod = Schema.Literals(analyticsPeriods)
export type AnalyticsPeriod = typeof AnalyticsPeriod.Type

/** The bucket widths of GET /analytics/validations. */
export const analyticsIntervals = ["hour", "day"] as const
export const AnalyticsInterval = Schema.Literals(analyticsIntervals)
export type AnalyticsInterval = typeof AnalyticsInterval.Type

/** The kinds of anomaly GET /analytics/anomalies reports (CONTRACT §11). */
export const anomalyTypes = ["fingerprint_churn", "ip_churn", "validation_spike", "failed_validation_burst"] as const
export const AnomalyType = Schema.Literals(anomalyTypes)
export type AnomalyType = typeof AnomalyType.Type

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

// ---- subscriptions (CONTRACT §10) ---------------------------------------------------------------------------

/** A subscription's status. `cancelled` and `expired` are final. */
export const subscriptionStatuses = ["pending", "trial", "active", "on-hold", "pending-cancel", "cancelled", "expired"] as const
export const SubscriptionStatus = Schema.Literals(subscriptionStatuses)
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/** The unit of a billing period; a period is `billing_interval` of them. */
export const billingPeriods = ["day", "week", "month", "year"] as const
export const BillingPeriod = Schema.Literals(billingPeriods)
export type BillingPeriod = typeof BillingPeriod.Type

/**
 * What moves a subscription: the administrator's actions (pause, resume, cancel now or at the period end, renew
 * early or record a payment, switch plan) and the clock's (payment failed after the grace days, trial end,
 * period end, end date).
 */
export const subscriptionActions = [
  "pause",
  "resume",
  "cancel",
  "cancel_at_period_end",
  "renew",
  "switch",
  "update",
  "payment_failed",
  "trial_end",
  "period_end",
  "end_date"
] as const
export const SubscriptionAction = Schema.Literals(subscriptionActions)
export type SubscriptionAction = typeof SubscriptionAction.Type

/** The kind of a renewal record. */
export const renewalTypes = ["signup", "renewal", "early_renewal", "switch"] as const
export const RenewalType = Schema.Literals(renewalTypes)
export type RenewalType = typeof RenewalType.Type

/** Whether a renewal record's payment went through. */
export const renewalStatuses = ["paid", "failed", "pending"] as const
export const RenewalStatus = Schema.Literals(renewalStatuses)
export type RenewalStatus = typeof RenewalStatus.Type

/** A line of a subscription; `amount` in the currency's minor units. */
export interface SubscriptionItem {
  readonly id: number
  readonly productId: number | null
  readonly quantity: number
  readonly amount: number
}

/**
 * A subscription as the store keeps it. Times are epoch milliseconds; `amount` is in the currency's minor units
 * (cents for USD, yen for JPY). `billingAnchor` is the moment the billing calendar counts from: its day of the
 * month is kept by month arithmetic (Jan 31 → Feb 28 → Mar 31).
 */
export interface Subscription {
  readonly id: number
  readonly status: SubscriptionStatus
  readonly userId: number
  readonly productId: number | null
  readonly licenseId: number
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly amount: number
  readonly currency: string
  readonly paymentMethod: string | null
  readonly trialEnd: number | null
  readonly billingAnchor: number
  readonly currentPeriodStart: number
  readonly currentPeriodEnd: number
  readonly nextPaymentAt: number | null
  readonly lastPaymentAt: number | null
  readonly endDate: number | null
  readonly cancelAtPeriodEnd: boolean
  readonly pausedAt: number | null
  readonly cancelledAt: number | null
  readonly items: ReadonlyArray<SubscriptionItem>
  readonly createdAt: number
  readonly updatedAt: number
  readonly revision: number
}
/** A new subscription as the store inserts it (revision 1). */
export type SubscriptionDraft = Omit<Subscription, "id" | "revision">

/** The plan a switch moves between, as a renewal record's `from` and `to` show it. */
export interface Plan {
  readonly amount: number
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly productId: number | null
}

/** Proration of a switch, in minor units: `net = charge − credit` exactly; a negative net is a credit. */
export interface Proration {
  readonly credit: number
  readonly charge: number
  readonly net: number
}

/** One signup, renewal, early renewal or switch of a subscription (GET /subscriptions/{id}/renewals). */
export interface RenewalRecord {
  readonly id: number
  readonly subscriptionId: number
  readonly type: RenewalType
  readonly amount: number
  readonly currency: string
  readonly status: RenewalStatus
  readonly periodStart: number
  readonly periodEnd: number
  readonly proration: Proration | null
  readonly from: Plan | null
  readonly to: Plan | null
  readonly transactionId: string | null
  readonly createdAt: number
}
export type RenewalDraft = Omit<RenewalRecord, "id" | "subscriptionId">


