/** Rows for the storage contract suite: full drafts with every field set, so round trips check all of them. */
import { License, Model } from "@lm/domain"

/** A realistic epoch-millisecond instant (2026-01-01T00:00:00.123Z) the fixtures count from. */
export const T0 = 1_767_225_600_123
export const MINUTE = 60_000
export const DAY = 86_400_000

/** A key in the contract's format; distinct for distinct `n`. */
export const keyOf = (n: number, prefix = "K"): string => `${prefix}${String(n).padStart(4, "0")}-ABCD-EFGH-JKLM`

/** A license draft with defaults (`issued`, perpetual, unlimited) and the given changes. */
export const licenseDraft = (overrides: Partial<Model.LicenseDraft> = {}): Model.LicenseDraft => ({
  key: keyOf(1),
  state: "issued",
  ...License.defaultLicenseSettings,
  activatedAt: null,
  source: "api",
  generatorId: null,
  subscriptionId: null,
  suspendedBy: null,
  createdAt: T0,
  updatedAt: T0,
  ...overrides
})

/** A license draft with a value (not a default, not null) in every field. */
export const fullLicenseDraft = (generatorId: number): Model.LicenseDraft => ({
  key: "FULL-2345-6789-ABCD",
  state: "suspended",
  productId: 11,
  orderId: 22,
  userId: 33,
  maxActivations: 4,
  overageStrategy: "allow_1_5x",
  isFloating: true,
  leaseDuration: 900,
  requireHeartbeat: true,
  heartbeatInterval: 120,
  validForDays: 30,
  expiresAt: T0 + 30 * DAY,
  graceDays: 3,
  meta: { plan: "pro", seats: 3, ratio: 0.5, flags: [true, false], nested: { list: [1, "two", null], empty: {} }, nothing: null },
  policyId: null,
  entitlements: ["export", "sync"],
  activatedAt: T0 + 5,
  source: "generator",
  generatorId,
  subscriptionId: 77,
  suspendedBy: "subscription",
  createdAt: T0 + 1,
  updatedAt: T0 + 2
})

/** A machine draft on a license, active and holding a seat without deadline. */
export const machineDraft = (licenseId: number, fingerprint: string, overrides: Partial<Model.MachineDraft> = {}): Model.MachineDraft => ({
  licenseId,
  fingerprint,
  name: null,
  hostname: null,
  platform: null,
  appVersion: null,
  ipAddress: null,
  status: "active",
  activatedAt: T0,
  deactivatedAt: null,
  deactivationReason: null,
  lastHeartbeatAt: null,
  leaseExpiresAt: null,
  seatDeadline: null,
  meta: {},
  components: [],
  createdAt: T0,
  ...overrides
})

/** A machine draft with a value in every field. */
export const fullMachineDraft = (licenseId: number): Model.MachineDraft => ({
  licenseId,
  fingerprint: "fp-full-0001",
  name: "Build server",
  hostname: "build-01.example.com",
  platform: "linux-x64",
  appVersion: "2.4.1",
  ipAddress: "203.0.113.9",
  status: "inactive",
  activatedAt: T0 + 10,
  deactivatedAt: T0 + 20,
  deactivationReason: "heartbeat_dead",
  lastHeartbeatAt: T0 + 15,
  leaseExpiresAt: T0 + 25,
  seatDeadline: T0 + 30,
  meta: { rack: "B2", cores: 16, tags: ["ci", "x64"], gpu: null },
  components: [
    { kind: "cpu", fingerprint: "cpu-123", name: "Ryzen 9" },
    { kind: "disk", fingerprint: "disk-456", name: null }
  ],
  createdAt: T0 + 10
})

export const generatorDraft = (overrides: Partial<Model.GeneratorDraft> = {}): Model.GeneratorDraft => ({
  name: "Pool",
  charset: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
  chunkLength: 4,
  prefix: "",
  productId: null,
  defaultMaxActivations: null,
  defaultValidDays: null,
  defaultOverageStrategy: null,
  defaultIsFloating: null,
  createdAt: T0,
  updatedAt: T0,
  ...overrides
})

export const apiKeyDraft = (n: number, overrides: Partial<Model.ApiKeyDraft> = {}): Model.ApiKeyDraft => ({
  description: `key ${n}`,
  scope: "read_write",
  consumerKeyHash: `ck-hash-${n}`,
  consumerSecretHash: `cs-hash-${n}`,
  truncatedKey: `ck_…${n}`,
  createdAt: T0,
  lastAccessAt: null,
  ...overrides
})

export const event = (type: Model.DomainEvent["type"], n: number, licenseId: number | null = null): Model.DomainEvent => ({
  type,
  occurredAt: T0 + n,
  licenseId,
  machineId: null,
  data: { n, license_key: keyOf(n), nested: { list: [1, "two", null] } }
})

export const activity = (licenseId: number | null, result = "valid"): Model.ActivityEntry => ({
  kind: "validate",
  licenseId,
  licenseKey: keyOf(licenseId ?? 0),
  machineId: null,
  fingerprint: null,
  ipAddress: "198.51.100.1",
  appVersion: null,
  result,
  at: T0
})

let externalIds = 0

/** A subscription on `licenseId` with every field set (overrides apply on top; each its own `externalId`). */
export const subscriptionDraft = (licenseId: number, overrides: Partial<Model.SubscriptionDraft> = {}): Model.SubscriptionDraft => ({
  status: "active",
  userId: 7,
  productId: 3,
  licenseId,
  billingPeriod: "month",
  billingInterval: 1,
  amount: 9_007_199_254_740_991,
  currency: "USD",
  paymentMethod: "card",
  trialEnd: T0 - DAY,
  billingAnchor: T0,
  currentPeriodStart: T0,
  currentPeriodEnd: T0 + 31 * DAY,
  nextPaymentAt: T0 + 31 * DAY,
  lastPaymentAt: T0,
  endDate: T0 + 365 * DAY,
  cancelAtPeriodEnd: true,
  pausedAt: T0 + 1,
  cancelledAt: T0 + 2,
  items: [{ id: 1, productId: 3, quantity: 2, amount: 1500 }],
  billingProvider: "stripe",
  externalId: `sub_${++externalIds}`,
  createdAt: T0,
  updatedAt: T0 + 3,
  ...overrides
})

/** A subscription draft with every optional field null. */
export const bareSubscriptionDraft = (licenseId: number, overrides: Partial<Model.SubscriptionDraft> = {}): Model.SubscriptionDraft =>
  subscriptionDraft(licenseId, {
    productId: null,
    paymentMethod: null,
    trialEnd: null,
    nextPaymentAt: null,
    lastPaymentAt: null,
    endDate: null,
    cancelAtPeriodEnd: false,
    pausedAt: null,
    cancelledAt: null,
    items: [],
    billingProvider: null,
    externalId: null,
    ...overrides
  })

/** A webhook draft with defaults (active, two events) and the given changes. */
export const webhookDraft = (overrides: Partial<Model.WebhookDraft> = {}): Model.WebhookDraft => ({
  name: "hook",
  url: "https://hooks.example.com/lm",
  events: ["license.created", "machine.activated"],
  status: "active",
  sealedSecret: "lm-sealed:v1:00000000:c2VhbGVk",
  failingSince: null,
  createdAt: T0,
  updatedAt: T0,
  ...overrides
})

/** A pending delivery draft of that webhook and event, due at T0, with the given changes. */
export const deliveryDraft = (webhookId: number, eventId: number, overrides: Partial<Model.WebhookDeliveryDraft> = {}): Model.WebhookDeliveryDraft => ({
  webhookId,
  eventId,
  type: "license.created",
  status: "pending",
  attempts: 0,
  responseStatus: null,
  responseExcerpt: null,
  lastAttemptAt: null,
  nextAttemptAt: T0,
  lockedUntil: null,
  createdAt: T0,
  ...overrides
})
