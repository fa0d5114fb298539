/**
 * The ports every feature uses: transactions (`Store`) and the outbox of domain events, and the paging of lists.
 * Each feature declares the repositories it needs beside its own records; `@lm/storage-memory` and
 * `@lm/storage-pg` implement every one. No business rule lives behind a port: stores filter, order and lock, the
 * domain decides.
 */
import { Context, type Effect } from "effect"
import type { StorageUnavailable } from "./errors.js"
import type { DomainEvent, StoredEvent } from "./model.js"

/** What a port's operation returns: its answer, or its own errors and `StorageUnavailable`. */
export type Op<A, E = never> = Effect.Effect<A, E | StorageUnavailable>

/** A page request: 1-based page, at most 100 per page (the HTTP layer clamps). */
export interface PageRequest {
  readonly page: number
  readonly perPage: number
}

/** A page of items and the total number of matches. */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
}

/**
 * Transactions. Inside `transaction`, every port call takes part in the same transaction; a failure rolls all of
 * it back. Rows a transaction locks (`LicenseRepository.lockByKey`, the other repositories' `lockById`, and every
 * update or delete) stay locked until it ends, so check-then-write flows (activation, pool draw) are atomic on
 * every store and across processes sharing one database.
 */
/**
 * Marks the store calls under it as one bulk write, whose time grows with its size (an import of up to 10,000
 * licenses with their machines): stores that bound each call and transaction in time (PostgreSQL, PGlite: 15 s,
 * against a server that stops answering) give such calls a longer bound.
 */
export const BulkWrite = Context.Reference<boolean>("@lm/domain/BulkWrite", { defaultValue: () => false })

export class Store extends Context.Service<Store, {
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageUnavailable, R>
  /** A cheap round trip that tells whether the store answers. */
  readonly ping: Op<void>
}>()("@lm/domain/Store") {}

/**
 * The outbox: events written in the same transaction as the change they describe. Each append also advances
 * the revocation sequence when an event changes what the CRL lists. A store holds every event, except that a
 * store in memory holds a window of the newest (the memory store's `outboxWindow`, at least 1,000) and past it
 * only the ones a webhook still needs (not fanned out yet, or named by a delivery it holds): the reads see what
 * the store holds.
 */
export class EventOutbox extends Context.Service<EventOutbox, {
  readonly append: (events: ReadonlyArray<DomainEvent>) => Op<void>
  /** Events in the order written, after the given id (for delivery and tests). */
  readonly readAfter: (afterId: number, limit: number) => Op<ReadonlyArray<StoredEvent>>
  /** One committed event by id (what a webhook delivery sends). */
  readonly findById: (id: number) => Op<StoredEvent | undefined>
  /** The committed events of these ids that exist, in any order: a batch of deliveries' events in one read. */
  readonly findByIds: (ids: ReadonlyArray<number>) => Op<ReadonlyArray<StoredEvent>>
  /** A number that grows whenever a revocation-relevant event is appended (the CRL's `seq`). */
  readonly revocationSeq: Op<number>
}>()("@lm/domain/EventOutbox") {}
