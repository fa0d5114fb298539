/**
 * Ports: what the domain needs from a store. `@lm/storage-memory` and `@lm/storage-pg` implement every one.
 * No business rule lives behind a port: stores filter, order and lock, the domain decides.
 */
import { Context, Effect, type Scope } from "effect"
import type { LicenseExists, ReleaseExists, StorageUnavailable } from "./errors.js"
import type {
  ActivityEntry,
  ApiKey,
  ApiKeyDraft,
  ComponentDraft,
  DomainEvent,
  Generator,
  GeneratorDraft,
  License,
  LicenseDraft,
  LicenseSortColumn,
  LicenseState,
  Machine,
  MachineDraft,
  MachineStatus,
  Release,
  ReleaseChannel,
  ReleaseDraft,
  SortDirection,
  StoredEvent,
  StoredSigningKey,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryDraft,
  WebhookDraft
} from "./model.js"

type Op<A, E = never> = Effect.Effect<A, E | StorageUnavailable>

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
 * Filters of GET /licenses. `states` filters on the stored state. The derived statuses are resolved by the
 * Licenses service: `expired` = state `issued` + `expiredAt {value: true}`; `active`/`inactive` = state
 * `issued` + not expired + `hasSeatHolderAt`.
 */
export interface LicenseQuery extends PageRequest {
  readonly states?: ReadonlyArray<LicenseState> | undefined
  readonly productId?: number | undefined
  readonly orderId?: number | undefined
  readonly userId?: number | undefined
  readonly generatorId?: number | undefined
  /** Key prefix (normalised). */
  readonly keyPrefix?: string | undefined
  /** `expires_at < expiresBefore` (licenses without expiry never match). */
  readonly expiresBefore?: number | undefined
  /** `expires_at > expiresAfter` (licenses without expiry never match). */
  readonly expiresAfter?: number | undefined
  /**
   * Whether the license's grace period ended before `at`. Stores keep the grace end that the domain's
   * `expiryWithGrace` computes on every write and compare it here (null never counts as ended).
   */
  readonly expiredAt?: { readonly at: number; readonly value: boolean } | undefined
  /**
   * Whether the license has (true) or has not (false) a machine in `active` status whose stored seat
   * deadline is null or later than `at`.
   */
  readonly hasSeatHolderAt?: { readonly at: number; readonly value: boolean } | undefined
  readonly orderBy: LicenseSortColumn
  readonly order: SortDirection
}

/**
 * Transactions and the license row lock. Inside `transaction`, every port call takes part in the same
 * transaction; a failure rolls all of it back. `lockLicense` loads a license and holds its lock until the
 * transaction ends, so check-then-write flows (activation, pool draw) are atomic on every store and across
 * processes sharing one database.
 */
export class Store extends Context.Service<Store, {
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageUnavailable, R>
  readonly lockLicense: (key: string) => Op<License | undefined>
  readonly lockLicenseById: (id: number) => Op<License | undefined>
  /**
   * Loads the licenses with these keys and holds their locks until the transaction ends, taking the locks in
   * id order with one statement, so that transactions locking several licenses cannot deadlock each other.
   * Keys without a license are left out; the answer is in id order.
   */
  readonly lockLicenses: (keys: ReadonlyArray<string>) => Op<ReadonlyArray<License>>
  /** A cheap round trip that tells whether the store answers. */
  readonly ping: Op<void>
}>()("@lm/domain/Store") {}

export class LicenseRepository extends Context.Service<LicenseRepository, {
  readonly insert: (draft: LicenseDraft) => Op<License, LicenseExists>
  /** Inserts many at once, all or nothing (generator pools). */
  readonly insertMany: (drafts: ReadonlyArray<LicenseDraft>) => Op<ReadonlyArray<License>, LicenseExists>
  readonly findByKey: (key: string) => Op<License | undefined>
  readonly findById: (id: number) => Op<License | undefined>
  readonly list: (query: LicenseQuery) => Op<Page<License>>
  /** Writes every field of the license (its revision already advanced by the domain). */
  readonly update: (license: License) => Op<License>
  /** Deletes the license and its machines. */
  readonly delete: (id: number) => Op<void>
  /**
   * Locks and returns the oldest `pending` key of a generator's pool, skipping rows other transactions hold
   * (FOR UPDATE SKIP LOCKED), or undefined when the pool is empty. Only inside a transaction.
   */
  readonly claimFromPool: (generatorId: number) => Op<License | undefined>
  /** How many `pending` keys a generator's pool holds. */
  readonly poolSize: (generatorId: number) => Op<number>
  /** Deletes a generator's `pending` keys; returns how many. */
  readonly deletePool: (generatorId: number) => Op<number>
  /** Keys of licenses in these states (for the CRL). */
  readonly keysInStates: (states: ReadonlyArray<LicenseState>) => Op<ReadonlyArray<string>>
}>()("@lm/domain/LicenseRepository") {}

export interface MachineQuery extends PageRequest {
  readonly status?: MachineStatus | undefined
}

/** What {@link MachineRepository.writeSeatChanges} writes. */
export interface SeatChangeWrites {
  readonly inserts: ReadonlyArray<MachineDraft>
  readonly updates: ReadonlyArray<Machine>
  readonly events: ReadonlyArray<{ readonly event: DomainEvent; readonly insertIndex?: number | undefined }>
}

export class MachineRepository extends Context.Service<MachineRepository, {
  readonly insert: (draft: MachineDraft) => Op<Machine>
  /** Writes the machine's fields; replaces its components when `components` is given. */
  readonly update: (machine: Machine, components?: ReadonlyArray<ComponentDraft>) => Op<Machine>
  readonly findById: (id: number) => Op<Machine | undefined>
  readonly findByFingerprint: (licenseId: number, fingerprint: string) => Op<Machine | undefined>
  /** The license's machines in `active` status (whether or not they still hold a seat). */
  readonly listActive: (licenseId: number) => Op<ReadonlyArray<Machine>>
  /** The machines in `active` status of each of these licenses (for lists of licenses). */
  readonly listActiveOf: (licenseIds: ReadonlyArray<number>) => Op<ReadonlyArray<Machine>>
  /** The license's machines in `active` status plus the record of `fingerprint` in any status. */
  readonly listForValidation: (licenseId: number, fingerprint: string | null) => Op<ReadonlyArray<Machine>>
  /**
   * In one read, what a group of seat changes needs: the machines in `active` status of every license named,
   * plus the record of each named (license, fingerprint) in any status. Each machine once, in id order.
   */
  readonly listForSeatChanges: (
    named: ReadonlyArray<{ readonly licenseId: number; readonly fingerprint: string }>
  ) => Op<ReadonlyArray<Machine>>
  /**
   * The writes of a group of seat changes, in one statement where the store can: inserts the drafts (without
   * components), writes the fields of the updated machines, and appends the events to the outbox in order (as
   * `EventOutbox.append` does). An event naming `insertIndex` is about that inserted machine and gets its id as
   * `machineId`. Answers the inserted machines in draft order. All or nothing inside the caller's transaction.
   */
  readonly writeSeatChanges: (writes: SeatChangeWrites) => Op<ReadonlyArray<Machine>>
  readonly list: (licenseId: number, query: MachineQuery) => Op<Page<Machine>>
  /**
   * Claims up to `limit` active machines whose stored seat deadline is at or before `now`, skipping machines
   * other transactions hold (FOR UPDATE SKIP LOCKED), so that several processes may sweep at once. Only inside
   * a transaction.
   */
  readonly claimExpired: (now: number, limit: number) => Op<ReadonlyArray<Machine>>
  /** Revoked machines, for the CRL. */
  readonly listRevoked: Op<ReadonlyArray<Pick<Machine, "id" | "fingerprint">>>
}>()("@lm/domain/MachineRepository") {}

export class GeneratorRepository extends Context.Service<GeneratorRepository, {
  readonly insert: (draft: GeneratorDraft) => Op<Generator>
  readonly findById: (id: number) => Op<Generator | undefined>
  readonly list: (page: PageRequest) => Op<Page<Generator>>
  readonly update: (generator: Generator) => Op<Generator>
  readonly delete: (id: number) => Op<void>
}>()("@lm/domain/GeneratorRepository") {}

export class ApiKeyRepository extends Context.Service<ApiKeyRepository, {
  readonly insert: (draft: ApiKeyDraft) => Op<ApiKey>
  readonly findByConsumerKeyHash: (hash: string) => Op<ApiKey | undefined>
  readonly list: (page: PageRequest) => Op<Page<ApiKey>>
  /** Returns whether a key was deleted. */
  readonly delete: (id: number) => Op<boolean>
  readonly count: Op<number>
  readonly touch: (id: number, at: number) => Op<void>
}>()("@lm/domain/ApiKeyRepository") {}

export class SigningKeyRepository extends Context.Service<SigningKeyRepository, {
  /** Every key still accepted for verification, the current one included. */
  readonly list: Op<ReadonlyArray<StoredSigningKey>>
  /** Adds a key; when it is `current`, the previous current key stays listed but is no longer current. */
  readonly insert: (key: StoredSigningKey) => Op<void>
  /** Replaces the stored seed of a key (to seal a seed an older version stored in clear). */
  readonly replaceSeed: (kid: string, seed: string) => Op<void>
  /** Removes a key that is not current, so it is no longer published or accepted; false when there is none. */
  readonly retire: (kid: string) => Op<boolean>
}>()("@lm/domain/SigningKeyRepository") {}

/**
 * The outbox: events written in the same transaction as the change they describe. Each append also advances
 * the revocation sequence when an event changes what the CRL lists.
 */
export class EventOutbox extends Context.Service<EventOutbox, {
  readonly append: (events: ReadonlyArray<DomainEvent>) => Op<void>
  /** Events in the order written, after the given id (for delivery and tests). */
  readonly readAfter: (afterId: number, limit: number) => Op<ReadonlyArray<StoredEvent>>
  /** One committed event by id (what a webhook delivery sends). */
  readonly findById: (id: number) => Op<StoredEvent | undefined>
  /** A number that grows whenever a revocation-relevant event is appended (the CRL's `seq`). */
  readonly revocationSeq: Op<number>
}>()("@lm/domain/EventOutbox") {}

/** Registered webhooks (CONTRACT §11); the secret arrives and leaves sealed. */
export class WebhookRepository extends Context.Service<WebhookRepository, {
  readonly insert: (draft: WebhookDraft) => Op<Webhook>
  readonly findById: (id: number) => Op<Webhook | undefined>
  /** Oldest first. */
  readonly list: (page: PageRequest) => Op<Page<Webhook>>
  /** The webhooks in `active` status, in id order (the ones events fan out to). */
  readonly listActive: Op<ReadonlyArray<Webhook>>
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
  /** Writes every field of a delivery. */
  readonly update: (delivery: WebhookDelivery) => Op<WebhookDelivery>
  readonly findById: (webhookId: number, id: number) => Op<WebhookDelivery | undefined>
  /** A webhook's deliveries, newest first. */
  readonly list: (webhookId: number, page: PageRequest) => Op<Page<WebhookDelivery>>
}>()("@lm/domain/WebhookDeliveryQueue") {}

/** Filters of a release list. */
export interface ReleaseQuery extends PageRequest {
  readonly productId?: number | undefined
  /** Only releases in these channels (none when empty). */
  readonly channels?: ReadonlyArray<ReleaseChannel> | undefined
}

/** Published releases (CONTRACT §9). A product has one release per version. */
export class ReleaseRepository extends Context.Service<ReleaseRepository, {
  /** Inserts a release; `ReleaseExists` when its product already has that version. */
  readonly insert: (draft: ReleaseDraft) => Op<Release, ReleaseExists>
  readonly findById: (id: number) => Op<Release | undefined>
  readonly findByVersion: (productId: number, version: string) => Op<Release | undefined>
  /** Newest first: by `versionKey` byte-wise, descending, then id descending. */
  readonly list: (query: ReleaseQuery) => Op<Page<Release>>
}>()("@lm/domain/ReleaseRepository") {}

/** An artifact written to the artifact store: its key there, byte count and lowercase hex SHA-256. */
export interface StoredArtifact {
  readonly key: string
  readonly size: number
  readonly sha256: string
}

/** An upload over the byte limit: nothing of it is kept. */
export class ArtifactTooLarge {
  readonly _tag = "ArtifactTooLarge"
  constructor(readonly maxBytes: number) {}
}

/**
 * Where uploaded release artifacts live (a folder, an S3-compatible bucket). Artifacts stream through: nothing
 * holds a whole one in memory. A write is all or nothing: a failed, cut off or interrupted `put` leaves nothing
 * readable behind.
 */
export class ArtifactStore extends Context.Service<ArtifactStore, {
  /** Streams `body` in, counting bytes and hashing them; fails with `ArtifactTooLarge` past `maxBytes`. */
  readonly put: (body: AsyncIterable<Uint8Array>, maxBytes: number) => Op<StoredArtifact, ArtifactTooLarge>
  /** The artifact's bytes, or the inclusive byte range `[start, end]` of them; undefined when it is gone. */
  readonly open: (
    key: string,
    range?: { readonly start: number; readonly end: number }
  ) => Op<AsyncIterable<Uint8Array> | undefined>
  readonly delete: (key: string) => Op<void>
}>()("@lm/domain/ArtifactStore") {}

/**
 * The event log (analytics): every client call and refusal, written in batches. A store holds an entry until
 * `prune` removes it, except that a store in memory holds only a window of the newest entries (the memory
 * store's `activityWindow`, at least 1,000): `count` counts what the store holds now.
 */
export class ActivityLog extends Context.Service<ActivityLog, {
  readonly record: (entries: ReadonlyArray<ActivityEntry>) => Op<void>
  readonly count: (filter: { readonly licenseId?: number | undefined }) => Op<number>
  /**
   * Deletes at most `limit` entries whose time is before `olderThan` (epoch ms), oldest first, skipping rows
   * other transactions hold; returns how many it deleted (fewer than `limit`: none older are left). Retention
   * calls it outside transactions, in small batches, so each statement stays short.
   */
  readonly prune: (olderThan: number, limit: number) => Op<number>
}>()("@lm/domain/ActivityLog") {}

/**
 * Licenses changed by other processes sharing the store: `subscribe` calls `onChange` with a license id for each
 * change another process commits (or `"all"` when changes may have been missed, e.g. after a reconnect), for as
 * long as its scope lives. Stores that only one process can open (memory, PGlite) need no feed: the default
 * reports nothing.
 */
export const LicenseChangeFeed = Context.Reference<{
  readonly subscribe: (onChange: (licenseId: number | "all") => void) => Effect.Effect<void, never, Scope.Scope>
}>("@lm/domain/LicenseChangeFeed", {
  defaultValue: () => ({ subscribe: () => Effect.void })
})

/**
 * Every port a store layer provides (`@lm/storage-memory`, `@lm/storage-pg`); `LicenseChangeFeed` is optional (it
 * defaults to no feed).
 */
export type StorePorts =
  | Store
  | LicenseRepository
  | MachineRepository
  | GeneratorRepository
  | ApiKeyRepository
  | SigningKeyRepository
  | EventOutbox
  | ActivityLog
  | WebhookRepository
  | WebhookDeliveryQueue
  | ReleaseRepository
