/**
 * The domain's ports on @effect/sql-pg, one module per port: the same queries on a PostgreSQL server and
 * on PGlite. Row locks (`FOR UPDATE`, `SKIP LOCKED` for pool draws and the sweep) let several processes share
 * one database.
 */
import { Layer } from "effect"
import type { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"
import * as ActivityLog from "./activity.js"
import * as Analytics from "./analytics.js"
import * as ApiKeys from "./apiKeys.js"
import * as AuditLog from "./audit.js"
import * as BillingEvents from "./billingEvents.js"
import * as Deliveries from "./deliveries.js"
import * as Generators from "./generators.js"
import * as Idempotency from "./idempotency.js"
import * as Licenses from "./licenses.js"
import * as Machines from "./machines.js"
import * as Outbox from "./outbox.js"
import * as Policies from "./policies.js"
import * as Releases from "./releases.js"
import * as SigningKeys from "./signingKeys.js"
import * as Store from "./store.js"
import * as Subscriptions from "./subscriptions.js"
import * as Webhooks from "./webhooks.js"

export { EventLogRowsPerInsert } from "./activity.js"
export { layerChangeFeed } from "./changeFeed.js"
export { layer as layerSharedRateLimits } from "./rateLimits.js"

/** Every port of the domain on the `PgClient` in context. */
export const portsLayer: Layer.Layer<Ports.StorePorts, never, PgClient> = Layer.mergeAll(
  Store.layer,
  Licenses.layer,
  Machines.layer,
  Generators.layer,
  Policies.layer,
  ApiKeys.layer,
  SigningKeys.layer,
  Outbox.layer,
  ActivityLog.layer,
  AuditLog.layer,
  Analytics.layer,
  Webhooks.layer,
  Deliveries.layer,
  Subscriptions.layer,
  BillingEvents.layer,
  Releases.layer,
  Idempotency.layer
)
