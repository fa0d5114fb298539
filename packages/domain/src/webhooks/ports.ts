/** What the webhooks feature needs from a store: the webhooks and their delivery queue. */
import { Context } from "effect"
import type { StoredEvent } from "../shared/model.js"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { Webhook, WebhookDelivery, WebhookDeliveryDraft, WebhookDraft } from "./model.js"

/** Registered webhooks (CONTRACT §11); the secret arrives and leaves sealed. */
export class WebhookRepository extends Context.Service<WebhookRepository, {
  readonly insert: (draft: WebhookDraft) => Op<Webhook>
  readonly findById: (id: number) => Op<Webhook | undefined>
  /** Oldest first. */
  readonly list: (page: PageRequest) => Op<Page<Webhook>>
  /** The webhooks in `active` status, in id order (the ones events fan out to). */
  readonly listActive: Op<ReadonlyArray<Webhook>>
  /**
   * Loads a webhook and holds its lock until the transaction ends (FOR UPDATE), so that processes changing its
   * failing streak and status do it one after the other. Only inside a transaction.
   */
  readonly lockById: (id: number) => Op<Webhook | undefined>
  readonly update: (webhook: Webhook) => Op<Webhook>
  /** Deletes the webhook and its deliveries; false when there is none. */
  readonly delete: (id: number) => Op<boolean>
}>()("@lm/domain/WebhookRepository") {}

/**
 * The webhook delivery queue. Outbox events are fanned out once each: a dispatcher claims events no dispatcher has
 * handled yet (never by id order, which does not follow commit order on PostgreSQL), and in the same transaction
 * writes their deliveries and marks them handled. Workers claim due deliveries for a lease, so several processes
 * share the work, none sends a delivery while another holds it, and a crashed worker's claims lapse.
 */
export class WebhookDeliveryQueue extends Context.Service<WebhookDeliveryQueue, {
  /**
   * Claims up to `limit` committed outbox events not yet dispatched, oldest first, skipping events other
   * transactions hold (FOR UPDATE SKIP LOCKED). Only inside a transaction.
   */
  readonly claimUndispatched: (limit: number) => Op<ReadonlyArray<StoredEvent>>
  /** Marks the events dispatched and inserts their deliveries (inside the claiming transaction). */
  readonly dispatch: (eventIds: ReadonlyArray<number>, deliveries: ReadonlyArray<WebhookDeliveryDraft>) => Op<void>
  /**
   * Claims up to `limit` `pending` deliveries of `active` webhooks whose next attempt is due at `now` and that no
   * one holds (no lock, or a lock that lapsed by `now`), setting their lock to `lockedUntil`; one atomic step. Which of the due ones are taken when more than `limit`
   * are due is the store's choice (the oldest due first where an index allows); the answer is in due order (then id).
   */
  readonly claimDue: (now: number, lockedUntil: number, limit: number) => Op<ReadonlyArray<WebhookDelivery>>
  /** Writes every field of a delivery (nothing when it was deleted with its webhook meanwhile). */
  readonly update: (delivery: WebhookDelivery) => Op<WebhookDelivery>
  /**
   * Records the attempts of a claimed batch in one write: each delivery's status, attempts, response, attempt
   * times and lock, as given; deliveries deleted with their webhook meanwhile stay deleted.
   */
  readonly recordAttempts: (deliveries: ReadonlyArray<WebhookDelivery>) => Op<void>
  readonly findById: (webhookId: number, id: number) => Op<WebhookDelivery | undefined>
  /** How many deliveries are `pending` (waiting for an attempt, of any webhook): the backlog. */
  readonly countPending: Op<number>
  /** A webhook's deliveries, newest first. */
  readonly list: (webhookId: number, page: PageRequest) => Op<Page<WebhookDelivery>>
}>()("@lm/domain/WebhookDeliveryQueue") {}
