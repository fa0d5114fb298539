/**
 * The domain's errors, reached as `Errors` (also from `@lm/domain/core` and `@lm/domain/errors`): each feature's,
 * composed here. Each carries the contract's `code` and HTTP `status` (CONTRACT §12), so that the HTTP adapter
 * maps them mechanically and never invents a code. Extra fields become `data.*` on the wire.
 */
import type { ApiKeyNotFound, Forbidden, RateLimited, Unauthorized } from "./access/errors.js"
import type {
  ConfirmationRequired,
  GeneratorNotFound,
  LicenseExists,
  LicenseNotFound,
  LicenseTerminated,
  MachineInactive,
  MachineLimitExceeded,
  MachineNotFound,
  PolicyInUse,
  PolicyNotFound,
  Refused
} from "./licensing/errors.js"
import type {
  DownloadTokenExpired,
  DownloadTokenInvalid,
  NotEntitled,
  ProductMismatch,
  ReleaseExists,
  ReleaseNotFound
} from "./releases/errors.js"
import type { IdempotencyKeyInUse, IdempotencyKeyReused } from "./idempotency/errors.js"
import type { InvalidParam, InvalidTransition, StorageUnavailable } from "./shared/errors.js"
import type { BillingSignatureInvalid } from "./billing/errors.js"
import type { SubscriptionExists, SubscriptionNotFound } from "./subscriptions/errors.js"
import type { WebhookNotFound } from "./webhooks/errors.js"

export * from "./shared/errors.js"
export * from "./access/errors.js"
export * from "./licensing/errors.js"
export * from "./subscriptions/errors.js"
export * from "./billing/errors.js"
export * from "./releases/errors.js"
export * from "./webhooks/errors.js"
export * from "./idempotency/errors.js"

/** Every error the domain's services can fail with. */
export type DomainError =
  | Refused
  | LicenseNotFound
  | MachineNotFound
  | GeneratorNotFound
  | PolicyNotFound
  | PolicyInUse
  | ApiKeyNotFound
  | SubscriptionNotFound
  | SubscriptionExists
  | BillingSignatureInvalid
  | WebhookNotFound
  | ReleaseNotFound
  | ReleaseExists
  | ProductMismatch
  | DownloadTokenInvalid
  | DownloadTokenExpired
  | NotEntitled
  | LicenseExists
  | InvalidTransition
  | LicenseTerminated
  | MachineInactive
  | MachineLimitExceeded
  | ConfirmationRequired
  | InvalidParam
  | Unauthorized
  | Forbidden
  | StorageUnavailable
  | RateLimited
  | IdempotencyKeyInUse
  | IdempotencyKeyReused
