/**
 * The webhooks feature's records: registered webhooks and their deliveries, and the names of the events about
 * webhooks themselves.
 */
import { Schema } from "effect"
import { Id, Millis } from "../shared/model.js"

/**
 * Names of the events about webhooks themselves that the core writes to the outbox: `webhook.disabled` (a webhook
 * whose deliveries all failed for a day) is an addition to CONTRACT §11's list.
 */
export const webhookOutboxEventTypes = ["webhook.disabled"] as const
export type WebhookOutboxEventType = (typeof webhookOutboxEventTypes)[number]

/** The subscription to every event. */
export const allWebhookEvents = "*"

/** A webhook's status: a `disabled` one receives nothing until it is re-enabled. */
export const webhookStatuses = ["active", "disabled"] as const
export const WebhookStatus = Schema.Literals(webhookStatuses)
export type WebhookStatus = typeof WebhookStatus.Type

/** A registered webhook. The store keeps its secret sealed with the master key (never in clear). */
export const Webhook = Schema.Struct({
  id: Id,
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
  id: Id,
  webhookId: Id,
  eventId: Id,
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
