/**
 * Ports, reached as `Ports`: what the domain needs from a store (and from an artifact store and a payment
 * gateway), each feature's, composed here. `@lm/storage-memory` and `@lm/storage-pg` implement every store port.
 * No business rule lives behind a port: stores filter, order and lock, the domain decides.
 */
import type { ApiKeyRepository } from "./access/ports.js"
import type { ActivityLog } from "./activity/ports.js"
import type { AuditLogRepository } from "./audit/ports.js"
import type { AnalyticsRepository } from "./analytics/ports.js"
import type { BillingEventRepository } from "./billing/ports.js"
import type { GeneratorRepository } from "./generators/ports.js"
import type { IdempotencyRepository } from "./idempotency/ports.js"
import type { LicenseRepository, MachineRepository, PolicyRepository } from "./licensing/ports.js"
import type { ReleaseRepository } from "./releases/ports.js"
import type { EventOutbox, Store } from "./shared/ports.js"
import type { SigningKeyRepository } from "./signing/ports.js"
import type { SubscriptionRepository } from "./subscriptions/ports.js"
import type { WebhookDeliveryQueue, WebhookRepository } from "./webhooks/ports.js"

export * from "./shared/ports.js"
export * from "./activity/ports.js"
export * from "./audit/ports.js"
export * from "./access/ports.js"
export * from "./signing/ports.js"
export * from "./licensing/ports.js"
export * from "./generators/ports.js"
export * from "./subscriptions/ports.js"
export * from "./billing/ports.js"
export * from "./analytics/ports.js"
export * from "./releases/ports.js"
export * from "./webhooks/ports.js"
export * from "./idempotency/ports.js"

/**
 * Every port a store layer provides (`@lm/storage-memory`, `@lm/storage-pg`); `LicenseChangeFeed` is optional (it
 * defaults to no feed).
 */
export type StorePorts =
  | Store
  | LicenseRepository
  | MachineRepository
  | GeneratorRepository
  | PolicyRepository
  | ApiKeyRepository
  | SigningKeyRepository
  | EventOutbox
  | ActivityLog
  | AuditLogRepository
  | AnalyticsRepository
  | WebhookRepository
  | WebhookDeliveryQueue
  | SubscriptionRepository
  | BillingEventRepository
  | ReleaseRepository
  | IdempotencyRepository
