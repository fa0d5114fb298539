/**
 * What every feature's records share: times, free-form metadata, sort directions, and the shape of a domain
 * event. Times are epoch milliseconds (UTC); the HTTP adapter writes them as ISO 8601. Durations are whole
 * seconds, as on the wire.
 */

import { Schema } from "effect"
import { Id, Millis } from "./record.js"

export * from "./record.js"

// Each list of names in the feature models is written once, as a tuple; its Schema and type derive from it, and
// the HTTP adapter's wire schemas, the CLI and the settings refer to these (the OpenAPI document lists the same
// values).

/** The directions a list may be sorted in. */
export const sortDirections = ["asc", "desc"] as const
export type SortDirection = (typeof sortDirections)[number]

/**
 * A domain event, written to the outbox in the same transaction as the change it describes. Each feature owns
 * the names of its events (`license.revoked` in licensing, `subscription.paused` in subscriptions, ...); the
 * whole list is `Model.eventTypes`.
 */
export const DomainEvent = Schema.Struct({
  type: Schema.String,
  occurredAt: Millis,
  licenseId: Schema.NullOr(Id),
  machineId: Schema.NullOr(Id),
  data: Schema.Record(Schema.String, Schema.Unknown)
})
export type DomainEvent = typeof DomainEvent.Type

/** An event as the outbox holds it, with its id. */
export const StoredEvent = Schema.Struct({ id: Id, ...DomainEvent.fields })
export type StoredEvent = typeof StoredEvent.Type
