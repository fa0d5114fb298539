/**
 * Ports: what the domain needs from a store. `@lm/storage-memory` and `@lm/storage-pg` implement every one.
 * No business rule lives behind a port: stores filter, order and lock, the domain decides.
 */
import { Context, Effect, type Scope } from "effect"
import type { HourlyCount, HourTotals, RollupScope } from "./analytics/rules.js"
import type { LicenseExists, ReleaseExists, StorageUnavailable } from "./errors.js"
import type {
  ActivityEntry,
  ActivityKind,
  AnalyticsPeriod,
  AnomalyType,
  ApiKey,
  ApiKeyDraft,
  BillingPeriod,
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
  RenewalDraft,
  RenewalRecord,
  RenewalStatus,
  Release,
  ReleaseChannel,
  ReleaseDraft,
  SortDirection,
  StoredEvent,
  StoredSigningKey,
  Subscription,
  SubscriptionDraft,
  SubscriptionStatus,
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

/** The filters of a {@link LicenseQuery} without its page and order: what `countEach` counts. */
export type LicenseFilter = Omit<LicenseQuery, keyof PageRequest | "orderBy" | "order">

/**
 * Transactions. Inside `transaction`, every port call takes part in the same transaction; a failure rolls all of
 * it back. Rows a transaction locks (`LicenseRepository.lockByKey`, the other repositories' `lockById`, and every
 * update or delete) stay locked until it ends, so check-then-write flows (activation, pool draw) are atomic on
 * every store and across processes sharing one database.
 */
export class Store extends Context.Service<Store, {
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageUnavailable, R>
  /** A cheap round trip that tells whether the store answers. */
  readonly ping: Op<void>
}>()("@lm/domain/Store") {}

export class LicenseRepository extends Context.Service<LicenseRepository, {
  /**
   * Loads a license and holds its row lock until the transaction ends (FOR UPDATE): check-then-write flows on a
   * license (activation, pool draw, every action) run one after the other. Called outside a transaction it runs as
   * one of its own: it waits for the current holder and answers the latest committed license.
   */
  readonly lockByKey: (key: string) => Op<License | undefined>
  /** {@link lockByKey} by id. */
  readonly lockById: (id: number) => Op<License | undefined>
  /**
   * Loads the licenses with these keys and holds their locks until the transaction ends, taking the locks in
   * id order with one statement, so that transactions locking several licenses cannot deadlock each other.
   * Keys without a license are left out; the answer is in id order.
   */
  readonly lockByKeys: (keys: ReadonlyArray<string>) => Op<ReadonlyArray<License>>
  readonly insert: (draft: LicenseDraft) => Op<License, LicenseExists>
  /** Inserts many at once, all or nothing (generator pools). */
  readonly insertMany: (drafts: ReadonlyArray<LicenseDraft>) => Op<ReadonlyArray<License>, LicenseExists>
  readonly findByKey: (key: string) => Op<License | undefined>
  readonly findById: (id: number) => Op<License | undefined>
  readonly list: (query: LicenseQuery) => Op<Page<License>>
  /**
   * How many licenses match each filter, in the filters' order. One pass over the licenses for all of them (the
   * analytics overview counts every status and expiry window at once over up to millions of licenses).
   */
  readonly countEach: (filters: ReadonlyArray<LicenseFilter>) => Op<ReadonlyArray<number>>
  /** Writes every field of the license (its revision already advanced by the domain). */
  readonly update: (license: License) => Op<License>
  /** Deletes the license, its machines and its subscriptions (with their renewal records). */
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
  /** The committed events of these ids that exist, in any order: a batch of deliveries' events in one read. */
  readonly findByIds: (ids: ReadonlyArray<number>) => Op<ReadonlyArray<StoredEvent>>
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

/** A row of the anomalies announced so far. */
export interface AnomalyRecord {
  readonly licenseId: number
  readonly type: AnomalyType
  readonly detectedAt: number
}

/**
 * What the analytics read (CONTRACT §11). The event log's `record` also adds each entry's hourly counters, as
 * `Analytics.hourlyCountsOf` computes them, in the same write (the rollups); retention prunes entries, never
 * counters. Every method only adds up, filters on the numbers it is given, and orders.
 */
export class AnalyticsRepository extends Context.Service<AnalyticsRepository, {
  /**
   * The counters of each hour in [from, to) (hours with none are left out), summed over every id of `scope`
   * or only over `scopeId`; ascending by hour.
   */
  readonly hourly: (query: {
    readonly scope: RollupScope
    readonly scopeId?: number | undefined
    readonly from: number
    readonly to: number
  }) => Op<ReadonlyArray<HourTotals>>
  /**
   * The licenses (not `noLicense`) with the most validations (valid + invalid) in the hours of the period's
   * window (the hours starting at or after its start as last set by `moveTopWindows`, every hour while it was
   * never set), most first (ties by id), at most `limit`. A store may keep these totals (summed as the event log
   * is written, aged by `moveTopWindows`) rather than add up the hourly counters on each call: the answer is the same.
   */
  readonly topLicenses: (period: AnalyticsPeriod, limit: number) => Op<ReadonlyArray<{ readonly licenseId: number; readonly validations: number }>>
  /**
   * Sets the start of each period's `topLicenses` window (an hour start, `Analytics.periodStart`): the hours
   * leaving the window are taken out of its totals, hours entering it (a window moved back) are added. Several
   * processes may call it at once: each change is applied once.
   */
  readonly moveTopWindows: (windows: ReadonlyArray<{ readonly period: AnalyticsPeriod; readonly from: number }>) => Op<void>
  /** Per license (not `noLicense`), the hours from `from` on whose `counter` (validations = valid + invalid) is at least `atLeast`. */
  readonly busyHours: (query: {
    readonly from: number
    readonly counter: "validations" | "refused"
    readonly atLeast: number
  }) => Op<ReadonlyArray<{ readonly licenseId: number; readonly hour: number; readonly count: number }>>
  /**
   * From the event log since `since`: per license (entries without one left out), how many distinct non-null
   * values of `column` its entries (of `kind` and `result` when given) hold, when at least `atLeast`.
   */
  readonly distinctPerLicense: (query: {
    readonly since: number
    readonly column: "fingerprint" | "ip_address"
    readonly kind?: ActivityKind | undefined
    readonly result?: string | undefined
    readonly atLeast: number
  }) => Op<ReadonlyArray<{ readonly licenseId: number; readonly count: number }>>
  /**
   * Over licenses in `states` with a seat limit (max_activations not null): the sum of their limits, and their
   * machines in `active` status whose seat deadline is null or after `at`.
   */
  readonly seats: (states: ReadonlyArray<LicenseState>, at: number) => Op<{ readonly activeMachines: number; readonly totalSeats: number }>
  /** Machines in `active` status whose seat deadline is null or after `at`, counted per app version (null included), most first. */
  readonly appVersions: (at: number) => Op<ReadonlyArray<{ readonly appVersion: string | null; readonly machines: number }>>
  /**
   * Records the anomalies not announced since `since` (none of the same license and type with `detectedAt` at
   * or after it) and answers those (in no set order), with the time given; the others are left as they are. Inside a
   * transaction, so that the announcement (an outbox event) commits with it and two processes never both
   * announce one.
   */
  readonly recordAnomalies: (anomalies: ReadonlyArray<AnomalyRecord>, since: number) => Op<ReadonlyArray<AnomalyRecord>>
  /** The announcement time of each (license, type) announced since `since`. */
  readonly anomaliesSince: (since: number) => Op<ReadonlyArray<AnomalyRecord>>
}>()("@lm/domain/AnalyticsRepository") {}

/**
 * What a change feed reports: the id of a license another process changed, `"all"` when changes may have been
 * missed (e.g. after a reconnect), or `{ aliveAsOf }`: every change committed before that time
 * ({@link feedTimeMillis}) has been reported — the feed's heartbeat came back through it.
 */
export type LicenseChange = number | "all" | { readonly aliveAsOf: number }

/**
 * The time of the feed's liveness, in which heartbeats are stamped and compared: milliseconds of the `Clock`'s
 * monotonic time, which a step of the wall clock (NTP) cannot move back. Meaningful within one process only.
 */
export const feedTimeMillis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.succeed(Number(clock.monotonicTimeNanosUnsafe() / 1_000_000n))
)

/**
 * How often a feed with `heartbeats` sends one through the store (ms). The domain decides how long a feed may stay
 * silent (`ValidationCache`'s `feedStaleMillis`); this is only the cadence stores report at.
 */
export const feedHeartbeatMillis = 500

/**
 * Licenses changed by other processes sharing the store: `subscribe` calls `onChange` with each
 * {@link LicenseChange}, for as long as its scope lives.
 *
 * A feed from a remote store (PostgreSQL LISTEN/NOTIFY) can go silent without an error: a black-holed link neither
 * delivers nor fails. Such a feed has `heartbeats: true` and reports `{ aliveAsOf }` about every
 * {@link feedHeartbeatMillis} while the store answers on it; its silence is then seen, and the validation cache
 * stops serving. Stores that only one process can open (memory, PGlite) have no remote feed, nothing can change
 * behind their back: the default feed reports nothing and is always alive (`heartbeats: false`).
 */
export const LicenseChangeFeed = Context.Reference<{
  readonly subscribe: (onChange: (change: LicenseChange) => void) => Effect.Effect<void, never, Scope.Scope>
  /** Whether the feed reports `{ aliveAsOf }` and is alive only while that is recent; false: always alive. */
  readonly heartbeats: boolean
}>("@lm/domain/LicenseChangeFeed", {
  defaultValue: () => ({ subscribe: () => Effect.void, heartbeats: false })
})

/** One bucket's share of a batch: advance its `tat` by `cost` ms (see `rateLimit.ts`). */
export interface RateLimitAdvance {
  readonly key: string
  readonly cost: number
}

/**
 * Rate-limit buckets shared by the processes of one deployment (PostgreSQL, Redis). `advance` applies a batch
 * atomically per key, `tat = max(tat, now) + cost` (an unknown key starts at `now`), and returns the new `tat`s
 * in order; a key whose `tat` has passed is a full bucket and may be forgotten. The default (`undefined`) shares
 * nothing: each process limits on its own, which is exact for a single process.
 */
export const SharedRateLimits = Context.Reference<{
  readonly advance:
    | ((batch: ReadonlyArray<RateLimitAdvance>, now: number) => Op<ReadonlyArray<number>>)
    | undefined
}>("@lm/domain/SharedRateLimits", {
  defaultValue: () => ({ advance: undefined })
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
  | AnalyticsRepository
  | WebhookRepository
  | WebhookDeliveryQueue
  | SubscriptionRepository
  | ReleaseRepository

/** Filters of GET /subscriptions. */
export interface SubscriptionQuery extends PageRequest {
  readonly status?: SubscriptionStatus | undefined
  readonly userId?: number | undefined
  readonly productId?: number | undefined
}

/**
 * Subscriptions and their renewal records (CONTRACT §10). Each write takes `dueAt`, the earliest moment the
 * clock has a move for the subscription as the domain's `Subscription.nextDueAt` computes it (null for none):
 * stores keep it indexed so the period-end job finds due work without a scan.
 */
export class SubscriptionRepository extends Context.Service<SubscriptionRepository, {
  readonly insert: (draft: SubscriptionDraft, dueAt: number | null) => Op<Subscription>
  readonly findById: (id: number) => Op<Subscription | undefined>
  /** Loads a subscription and holds its lock until the transaction ends (FOR UPDATE). */
  readonly lockById: (id: number) => Op<Subscription | undefined>
  /** Oldest first. */
  readonly list: (query: SubscriptionQuery) => Op<Page<Subscription>>
  /** Writes every field of the subscription (its revision already advanced by the domain). */
  readonly update: (subscription: Subscription, dueAt: number | null) => Op<Subscription>
  /**
   * Claims up to `limit` subscriptions whose `dueAt` is at or before `now`, earliest first, skipping rows other
   * transactions hold (FOR UPDATE SKIP LOCKED), so that several processes share the job and none makes a move
   * twice. Only inside a transaction.
   */
  readonly claimDue: (now: number, limit: number) => Op<ReadonlyArray<Subscription>>
  /**
   * Subscriptions counted and their prices (`amount`) summed per status, currency and billing period and
   * interval: what the analytics overview's figures are computed from (the domain's `Billing.monthlyRecurring`).
   */
  readonly totals: Op<ReadonlyArray<SubscriptionTotal>>
  readonly insertRenewal: (subscriptionId: number, draft: RenewalDraft) => Op<RenewalRecord>
  /** A subscription's renewal records, oldest first. */
  readonly listRenewals: (subscriptionId: number, page: PageRequest) => Op<Page<RenewalRecord>>
}>()("@lm/domain/SubscriptionRepository") {}

/** One group of {@link SubscriptionRepository.totals}. */
export interface SubscriptionTotal {
  readonly status: SubscriptionStatus
  readonly currency: string
  readonly billingPeriod: BillingPeriod
  readonly billingInterval: number
  readonly count: number
  /** The sum of the group's prices, in minor units (a bigint: a sum may pass 2^53). */
  readonly amount: bigint
}

/** A payment for a subscription: reported by the caller (with the provider's transaction id) or to be charged. */
export interface PaymentRequest {
  readonly subscriptionId: number
  readonly amount: number
  readonly currency: string
  readonly transactionId: string | null
}

/** What became of a payment. */
export interface PaymentOutcome {
  readonly status: RenewalStatus
  readonly transactionId: string | null
}

/**
 * Where subscription payments go (CONTRACT §10). The bundled default charges nothing itself: it records the
 * payments reported to it (`renew`, with an optional `transaction_id`) as paid. An embedder plugs in a payment
 * provider by providing another one.
 */
export const PaymentGateway = Context.Reference<{
  readonly collect: (request: PaymentRequest) => Effect.Effect<PaymentOutcome>
}>("@lm/domain/PaymentGateway", {
  defaultValue: () => ({ collect: (request) => Effect.succeed({ status: "paid", transactionId: request.transactionId }) })
})
