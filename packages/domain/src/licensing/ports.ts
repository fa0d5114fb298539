/**
 * What the licensing feature needs from a store: licenses (with their row locks, lists, counts and generator
 * pools), machines and their seat changes, and the feed of licenses other processes changed.
 */
import { type Clock, Context, Effect, type Scope } from "effect"
import type { DomainEvent, SortDirection } from "../shared/model.js"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import { generatorNotFound, type GeneratorNotFound, type LicenseExists, type PolicyInUse } from "./errors.js"
import type {
  ComponentDraft,
  License,
  LicenseDraft,
  LicenseSettings,
  LicenseSortColumn,
  LicenseState,
  Machine,
  MachineDraft,
  MachineStatus,
  Policy,
  PolicyDraft
} from "./model.js"

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
  /** `id > idAfter`: the next page of a walk over every license by id (keyset paging, as the export reads). */
  readonly idAfter?: number | undefined
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
  /**
   * `false`: the matches are not counted, and the page's `total` is 0 (a walk by `idAfter`, as the export reads,
   * needs no total, and counting would cost a scan of the remaining licenses on every page).
   */
  readonly withTotal?: boolean | undefined
}

/** The filters of a {@link LicenseQuery} without its page and order: what `countEach` counts. */
export type LicenseFilter = Omit<LicenseQuery, keyof PageRequest | "orderBy" | "order" | "withTotal">

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
  /** Every machine of each of these licenses, in any status, in id order (the export). */
  readonly listOf: (licenseIds: ReadonlyArray<number>) => Op<ReadonlyArray<Machine>>
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

/**
 * What a change feed reports: the id of a license another process changed, `{ policyId }` for a policy another
 * process changed (its entitlements are live on every license of it), `"all"` when changes may have been missed
 * (e.g. after a reconnect), or `{ aliveAsOf }`: every change committed before that time ({@link feedTimeMillis})
 * has been reported — the feed's heartbeat came back through it.
 */
export type LicenseChange = number | "all" | { readonly policyId: number } | { readonly aliveAsOf: number }

/**
 * The time of the feed's liveness, in which heartbeats are stamped and compared: milliseconds of the `Clock`'s
 * monotonic time, which a step of the wall clock (NTP) cannot move back. Meaningful within one process only.
 */
export const feedTimeOf = (clock: Clock.Clock): number => Number(clock.monotonicTimeNanosUnsafe() / 1_000_000n)

/** {@link feedTimeOf} the fiber's `Clock`. */
export const feedTimeMillis: Effect.Effect<number> = Effect.clockWith((clock) => Effect.succeed(feedTimeOf(clock)))

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

/**
 * How a license is created from a key generator (POST /licenses with `generator_id`, CONTRACT §8), inside the
 * caller's transaction: the generators feature provides it (`Generators.layerIssuer`), and `Licenses.create` calls
 * it. Without that feature no generator exists, so such a create fails with `generator_not_found`.
 */
export const GeneratorIssuer = Context.Reference<{
  /** The oldest `pending` key of the generator's pool with `settings` applied, or a key minted in its format. */
  readonly issue: (generatorId: number, settings: Partial<LicenseSettings>, now: number) => Op<License, GeneratorNotFound | LicenseExists>
}>("@lm/domain/GeneratorIssuer", {
  defaultValue: () => ({ issue: () => Effect.fail(generatorNotFound()) })
})

/** Filters of GET /policies. */
export interface PolicyQuery extends PageRequest {
  readonly productId?: number | undefined
}

/**
 * The policies (CONTRACT §15): the policies feature writes them; licensing reads a license's policy when it is
 * created with it or moved to it, and in validation (its live entitlement codes, through the validation cache).
 */
export class PolicyRepository extends Context.Service<PolicyRepository, {
  readonly insert: (draft: PolicyDraft) => Op<Policy>
  readonly findById: (id: number) => Op<Policy | undefined>
  /** {@link findById} holding the policy's row lock until the transaction ends (FOR UPDATE). */
  readonly lockById: (id: number) => Op<Policy | undefined>
  /** Policies in id order; filter `productId`. */
  readonly list: (query: PolicyQuery) => Op<Page<Policy>>
  readonly update: (policy: Policy) => Op<Policy>
  /**
   * Deletes the policy, or fails with `PolicyInUse` while a license refers to it — also one that a concurrent
   * transaction inserts or moves to it: the check and the delete are atomic on every store.
   */
  readonly delete: (id: number) => Op<void, PolicyInUse>
  /** How many licenses refer to each of these policies, in the ids' order. */
  readonly licenseCounts: (ids: ReadonlyArray<number>) => Op<ReadonlyArray<number>>
  /** The licenses of a policy, each locked until the transaction ends (taken in id order), in id order. */
  readonly lockLicenses: (policyId: number) => Op<ReadonlyArray<License>>
}>()("@lm/domain/PolicyRepository") {}
