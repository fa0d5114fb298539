/**
 * The store in memory: every port of `@lm/domain` on plain maps, for embedding and tests. Each port is built in a
 * file of its own (`licenses.ts`, `machines.ts`, ...) on the store's tables (`Tables.ts`); this file composes them.
 *
 * NOT DURABLE: everything lives in the process and is gone when it exits; two processes never share it.
 * Use `@lm/storage-pg` to keep data.
 *
 * Semantics (the same as the PostgreSQL store's, checked by the shared storage contract suite):
 * - `Store.transaction` is read committed: a transaction sees its own writes and what others committed; a
 *   failure, defect or interruption rolls back every write made inside. A nested `transaction` joins the
 *   enclosing one as a savepoint. Reads outside a transaction read committed rows directly.
 * - Writing or deleting an existing row takes that row's lock until the transaction ends (as PostgreSQL's
 *   UPDATE does); `LicenseRepository.lockByKey` takes it up front. Called outside a transaction, `lockByKey`
 *   runs as a transaction of its own: it waits for the current holder and returns the latest committed row.
 * - `claimFromPool`, `claimExpired` and `claimUndispatched` skip rows other transactions hold and must run inside a transaction
 *   (outside one they die: a claim that is released at once would hand the same row to two callers).
 * - Ids come from per-table sequences and are never reused. Outbox events get their ids when their
 *   transaction commits, so ids follow commit order.
 * - The event log holds only the newest `activityWindow` entries (default 100,000): older ones are dropped as
 *   new ones commit, so a long-running process keeps a bounded log (`ActivityLog.count` counts what is held).
 *   Likewise the webhook delivery log holds the newest `deliveryWindow` finished deliveries (default 100,000);
 *   pending ones are never dropped. And the outbox holds the newest `outboxWindow` events (default 100,000), and
 *   past them only the events a webhook still needs: not yet fanned out, or named by a delivery the log holds
 *   (one pending, or finished and redeliverable). `EventOutbox.readAfter` and `findById` see what is held.
 * - Violations of constraints that the ports cannot report as typed errors (a duplicate machine
 *   fingerprint, API key hash or signing key id, an update of a missing row, a deadlock) are defects.
 */
import { Ports } from "@lm/domain"
import { Context, Layer } from "effect"
import * as ActivityLog from "./activity.js"
import * as AnalyticsRepository from "./analytics.js"
import * as AuditLogRepository from "./audit.js"
import * as ApiKeyRepository from "./apiKeys.js"
import * as BillingEventRepository from "./billingEvents.js"
import { Database } from "./Database.js"
import * as WebhookDeliveryQueue from "./deliveries.js"
import * as GeneratorRepository from "./generators.js"
import * as IdempotencyRepository from "./idempotency.js"
import * as LicenseRepository from "./licenses.js"
import * as MachineRepository from "./machines.js"
import * as EventOutbox from "./outbox.js"
import * as PolicyRepository from "./policies.js"
import * as ReleaseRepository from "./releases.js"
import * as SigningKeyRepository from "./signingKeys.js"
import * as Store from "./store.js"
import * as SubscriptionRepository from "./subscriptions.js"
import { makeTables } from "./Tables.js"
import * as WebhookRepository from "./webhooks.js"

/** Every port the memory store provides. */
export type Services = Ports.StorePorts

/** Settings of a memory store. */
export interface Options {
  /** Newest event-log entries held (default {@link defaultActivityWindow}, at least 1,000). */
  readonly activityWindow?: number | undefined
  /** Newest finished (delivered or failed) webhook deliveries held (default {@link defaultDeliveryWindow}, at least 1,000). */
  readonly deliveryWindow?: number | undefined
  /** Newest outbox events held whether or not a webhook needs them (default {@link defaultOutboxWindow}, at least 1,000). */
  readonly outboxWindow?: number | undefined
}

/** The event-log window when none is given: some tens of MB. */
export const defaultActivityWindow = 100_000

/** The finished-delivery window when none is given: the delivery log of a long-running process stays bounded. */
export const defaultDeliveryWindow = 100_000

/** The outbox window when none is given: the outbox of a long-running process stays bounded. */
export const defaultOutboxWindow = 100_000

/** Builds a fresh, empty store and its ports, each from its own file on the store's tables. */
export const make = (options: Options = {}): Context.Context<Services> => {
  const tables = makeTables(new Database())
  const outbox = EventOutbox.make(tables, Math.max(1_000, options.outboxWindow ?? defaultOutboxWindow))
  const eventLog = ActivityLog.make(tables, Math.max(1_000, options.activityWindow ?? defaultActivityWindow))
  return Context.make(Ports.Store, Store.make(tables)).pipe(
    Context.add(Ports.LicenseRepository, LicenseRepository.make(tables)),
    Context.add(Ports.MachineRepository, MachineRepository.make(tables, outbox.eventOutbox)),
    Context.add(Ports.GeneratorRepository, GeneratorRepository.make(tables)),
    Context.add(Ports.PolicyRepository, PolicyRepository.make(tables)),
    Context.add(Ports.ApiKeyRepository, ApiKeyRepository.make(tables)),
    Context.add(Ports.SigningKeyRepository, SigningKeyRepository.make(tables)),
    Context.add(Ports.EventOutbox, outbox.eventOutbox),
    Context.add(Ports.ActivityLog, eventLog.activityLog),
    Context.add(Ports.AuditLogRepository, AuditLogRepository.make(tables)),
    Context.add(Ports.AnalyticsRepository, AnalyticsRepository.make(tables, eventLog)),
    Context.add(Ports.WebhookRepository, WebhookRepository.make(tables, outbox)),
    Context.add(
      Ports.WebhookDeliveryQueue,
      WebhookDeliveryQueue.make(tables, outbox, Math.max(1_000, options.deliveryWindow ?? defaultDeliveryWindow))
    ),
    Context.add(Ports.SubscriptionRepository, SubscriptionRepository.make(tables)),
    Context.add(Ports.BillingEventRepository, BillingEventRepository.make(tables)),
    Context.add(Ports.ReleaseRepository, ReleaseRepository.make(tables)),
    Context.add(Ports.IdempotencyRepository, IdempotencyRepository.make())
  )
}

/**
 * Every port on a fresh, empty store in memory. NOT DURABLE: the data lives as long as the layer. Each build
 * of the layer is a separate store (use `Layer.fresh` to force one where layers are shared).
 */
export const layer: Layer.Layer<Services> = Layer.syncContext(() => make())

/** {@link layer} with settings. */
export const layerWith = (options: Options): Layer.Layer<Services> => Layer.syncContext(() => make(options))
