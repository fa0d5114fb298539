/**
 * Every event a webhook may subscribe to (CONTRACT §11): each feature's own, composed here once. Webhooks deliver
 * every event any feature writes to the outbox, so this feature builds on all of them; a new feature with events
 * adds its list here.
 */
import { Schema } from "effect"
import { analyticsEventTypes } from "../analytics/model.js"
import { generatorEventTypes } from "../generators/model.js"
import { licensingEventTypes } from "../licensing/model.js"
import { policyEventTypes } from "../policies/model.js"
import { releaseEventTypes } from "../releases/model.js"
import { subscriptionEventTypes } from "../subscriptions/model.js"
import { webhookOutboxEventTypes } from "./model.js"

/** Names of the events of CONTRACT §11 that the core causes (and writes to the outbox). */
export const eventTypes = [
  ...licensingEventTypes,
  ...generatorEventTypes,
  ...policyEventTypes,
  ...analyticsEventTypes,
  ...releaseEventTypes,
  ...subscriptionEventTypes,
  ...webhookOutboxEventTypes
] as const
export const EventType = Schema.Literals(eventTypes)
export type EventType = typeof EventType.Type

/**
 * The events a webhook may subscribe to: the contract's whole list (CONTRACT §11). `*` subscribes to every one.
 */
export const webhookEventTypes = [...eventTypes, "webhook.ping"] as const
export const WebhookEventType = Schema.Literals(webhookEventTypes)
export type WebhookEventType = typeof WebhookEventType.Type
