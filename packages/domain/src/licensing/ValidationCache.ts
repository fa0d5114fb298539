/**
 * Keeps what validation reads — a license by key and its machines — in memory, so that POST /validate needs no
 * store round trip. Coherent by construction:
 * - every write through the ports invalidates the license it touches, and again when its transaction ends, so a
 *   read that raced an uncommitted write cannot keep a stale copy;
 * - a load only fills the cache when no invalidation of that license happened while it was loading;
 * - changes committed by other processes arrive through the store's `LicenseChangeFeed` (PostgreSQL
 *   LISTEN/NOTIFY), and a feed interruption clears everything;
 * - the cache serves only while that feed is known to be alive (see {@link feedAlive}): a feed that went silent
 *   (a black-holed link delivers nothing and reports no error) sends every validation to the store, which answers
 *   or fails (503) on its own;
 * - entries older than `maxAgeMillis` are reloaded anyway, and the cache holds at most `maxEntries`.
 * A license's policy (`PolicyRepository.findById`: its live entitlements) is kept the same way, by policy id.
 * Reads under a lock (`lockByKey`, `lockById`, `lockByKeys`), `listActive`, `findByFingerprint`,
 * `listForSeatChanges`, and any read inside a transaction always go to the store.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Store } from "../shared/ports.js"
import type { License, Machine, Policy } from "./model.js"
import {
  feedHeartbeatMillis,
  feedTimeMillis,
  feedTimeOf,
  LicenseChangeFeed,
  LicenseRepository,
  MachineRepository,
  PolicyRepository
} from "./ports.js"

export interface ValidationCacheOptions {
  /** Most licenses kept (default 200,000); the oldest entries go first. */
  readonly maxEntries?: number | undefined
  /** An entry is reloaded after this long even without a change (default 60 s). */
  readonly maxAgeMillis?: number | undefined
  /**
   * How long the change feed may be silent before the cache stops serving (default
   * {@link defaultFeedStaleMillis}); see {@link feedAlive}.
   */
  readonly feedStaleMillis?: number | undefined
}

/**
 * The default bound on the change feed's silence: 2 s, four heartbeats (`Ports.feedHeartbeatMillis`), so that a
 * late heartbeat or two on a busy pool does not yet send validations to the store.
 */
export const defaultFeedStaleMillis = 2_000

/** The shortest bound allowed: two heartbeats; below it every late heartbeat would send validations to the store. */
export const minFeedStaleMillis = 2 * feedHeartbeatMillis

/**
 * The rule of the feed's liveness: the cache may serve at `now` only when every change other processes committed
 * up to `staleMillis` before `now` is known to have been reported (`aliveAsOf`, the feed's last heartbeat).
 * A heartbeat comes back after every change committed before it was sent, so a revocation committed on another
 * server is hidden by this one's cache for at most `staleMillis` after its commit, whether the feed delivers it or
 * falls silent.
 */
export const feedAlive = (aliveAsOf: number, now: number, staleMillis: number): boolean => now - aliveAsOf <= staleMillis

/** What a validation reads, all of it held by the cache (see {@link CachedValidationReads}). */
export interface CachedReads {
  readonly license: License
  /** As `MachineRepository.listForValidation` answers. */
  readonly machines: ReadonlyArray<Machine>
  /** The license's policy (undefined without one, or when it is gone), as `PolicyRepository.findById` answers. */
  readonly policy: Policy | undefined
}

/**
 * The validation cache read at once, on the caller's stack, outside any transaction: what `findByKey`,
 * `listForValidation` and the policy's `findById` would answer from the cache, or undefined whenever one of them
 * would go to the store or log (not serving, the feed just heard again, an entry missing or past its age, its
 * machines or the fingerprint not loaded yet, the policy not held). The caller then takes the effectful path,
 * which loads. Without the cache (a bare store) it always answers undefined.
 */
export const CachedValidationReads = Context.Reference<{
  readonly peek: (key: string, fingerprint: string | null, clock: Clock.Clock) => CachedReads | undefined
}>("@lm/domain/ValidationCache/CachedValidationReads", { defaultValue: () => ({ peek: () => undefined }) })

/** The licenses touched by the current transaction, re-invalidated when it ends. */
class TouchedLicenses extends Context.Service<TouchedLicenses, Set<number>>()("@lm/domain/ValidationCache/TouchedLicenses") {}

/** The policies changed by the current transaction, re-invalidated when it ends. */
class TouchedPolicies extends Context.Service<TouchedPolicies, Set<number>>()("@lm/domain/ValidationCache/TouchedPolicies") {}

interface Entry {
  readonly license: License
  readonly loadedAt: number
  /** Machines in `active` status; loaded on first use. */
  active?: ReadonlyArray<Machine>
  /** The record of a fingerprint in any status (null: none). */
  readonly fingerprints: Map<string, Machine | null>
}

/**
 * Decorates the store's `Store`, `LicenseRepository` and `MachineRepository` with the cache; provide it over a
 * store layer.
 */
export const layerValidationCache = (options: ValidationCacheOptions = {}) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const store = yield* Store
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const policyStore = yield* PolicyRepository
      const feed = yield* LicenseChangeFeed
      const maxEntries = options.maxEntries ?? 200_000
      const maxAge = options.maxAgeMillis ?? 60_000
      const feedStale = options.feedStaleMillis ?? defaultFeedStaleMillis
      /**
       * Every change committed before this time (`feedTimeMillis`) has been reported; a feed without heartbeats is
       * always alive.
       */
      let aliveAsOf = feed.heartbeats ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY

      const byKey = new Map<string, Entry>()
      const keyOfId = new Map<number, string>()
      /** Grows on every invalidation of a license; a load stores its result only if it did not move. */
      const generations = new Map<number, number>()
      let epoch = 0

      const invalidate = (licenseId: number) => {
        generations.set(licenseId, (generations.get(licenseId) ?? 0) + 1)
        const key = keyOfId.get(licenseId)
        if (key !== undefined) {
          byKey.delete(key)
          keyOfId.delete(licenseId)
        }
      }
      /**
       * Policies as validation reads them (their entitlements are live on every license of them), with the time
       * each was loaded; an entry is dropped on every change of its policy, here or (through the feed) elsewhere.
       */
      const policyById = new Map<number, { readonly policy: Policy | undefined; readonly loadedAt: number }>()
      /** Grows on every invalidation of a policy; a load stores its result only if it did not move. */
      const policyGenerations = new Map<number, number>()
      const invalidatePolicy = (policyId: number) => {
        policyGenerations.set(policyId, (policyGenerations.get(policyId) ?? 0) + 1)
        policyById.delete(policyId)
      }

      const invalidateAll = () => {
        epoch++
        byKey.clear()
        keyOfId.clear()
        policyById.clear()
      }

      yield* feed.subscribe((change) => {
        if (typeof change === "number") invalidate(change)
        else if (change === "all") invalidateAll()
        else if ("policyId" in change) invalidatePolicy(change.policyId)
        else aliveAsOf = Math.max(aliveAsOf, change.aliveAsOf)
      })

      /** Whether the cache may serve now: one clock read and a compare, no round trip. */
      const serving = Effect.map(feedTimeMillis, (now) => feedAlive(aliveAsOf, now, feedStale))
      /** Whether the feed's silence was logged (once it had been heard: not before its first heartbeat). */
      let silenceLogged = false

      const touch = (licenseId: number) =>
        Effect.map(Effect.serviceOption(TouchedLicenses), (touched) => {
          invalidate(licenseId)
          if (touched._tag === "Some") touched.value.add(licenseId)
        })

      /** `touch` for the licenses of these machines. */
      const touchAll = (owned: ReadonlyArray<{ readonly licenseId: number }>) =>
        Effect.forEach(new Set(owned.map((m) => m.licenseId)), touch, { discard: true })

      const fresh = (entry: { readonly loadedAt: number }, now: number): boolean => now - entry.loadedAt < maxAge

      const entryFor = Effect.fnUntraced(function*(key: string) {
        const now = yield* Clock.currentTimeMillis
        if (!(yield* serving)) {
          // Changes committed elsewhere may not have reached this process: nothing kept may be served (dropping it
          // all also keeps loads in flight from storing), and this load is not kept either.
          if (byKey.size > 0) invalidateAll()
          if (!silenceLogged && aliveAsOf > Number.NEGATIVE_INFINITY) {
            silenceLogged = true
            yield* Effect.logWarning(
              `The store's change feed has been silent for more than ${feedStale} ms: validations read the store until it is heard again`
            )
          }
          const license = yield* licenses.findByKey(key)
          return license === undefined ? undefined : { license, loadedAt: now, fingerprints: new Map() }
        }
        if (silenceLogged) {
          silenceLogged = false
          yield* Effect.logInfo("The store's change feed is heard again: validations are served from the cache")
        }
        const cached = byKey.get(key)
        if (cached !== undefined && fresh(cached, now)) return cached
        // An entry past its age makes way for the reload (else the reload, seeing the key taken, would not be
        // kept, and every validation from then on would go to the store).
        if (cached !== undefined) {
          byKey.delete(key)
          keyOfId.delete(cached.license.id)
        }
        const startEpoch = epoch
        const license = yield* licenses.findByKey(key)
        if (license === undefined) return undefined
        const generation = generations.get(license.id) ?? 0
        const entry: Entry = { license, loadedAt: now, fingerprints: new Map() }
        if (startEpoch === epoch && (generations.get(license.id) ?? 0) === generation && !byKey.has(key)) {
          if (byKey.size >= maxEntries) {
            const oldest = byKey.keys().next().value
            if (oldest !== undefined) {
              const dropped = byKey.get(oldest)
              byKey.delete(oldest)
              if (dropped !== undefined) keyOfId.delete(dropped.license.id)
            }
          }
          byKey.set(key, entry)
          keyOfId.set(license.id, key)
        }
        return entry
      })

      /** Loads part of an entry, keeping it only if the license did not change meanwhile. */
      const fill = <A>(entry: Entry, load: Effect.Effect<A, any>, keep: (a: A) => void) =>
        Effect.gen(function*() {
          const generation = generations.get(entry.license.id) ?? 0
          const startEpoch = epoch
          const value = yield* load
          if (startEpoch === epoch && (generations.get(entry.license.id) ?? 0) === generation) keep(value)
          return value
        })

      const cachedLicenses = LicenseRepository.of({
        ...licenses,
        findByKey: (key) =>
          Effect.flatMap(Effect.serviceOption(TouchedLicenses), (inTransaction) =>
            inTransaction._tag === "Some" ? licenses.findByKey(key) : Effect.map(entryFor(key), (entry) => entry?.license)),
        update: (license) => Effect.andThen(touch(license.id), licenses.update(license)).pipe(Effect.tap(() => touch(license.id))),
        delete: (id) => Effect.andThen(touch(id), licenses.delete(id)).pipe(Effect.tap(() => touch(id))),
        deletePool: (generatorId) => Effect.tap(licenses.deletePool(generatorId), () => Effect.sync(invalidateAll))
      })

      const cachedMachines = MachineRepository.of({
        ...machines,
        insert: (draft) => Effect.andThen(touch(draft.licenseId), machines.insert(draft)).pipe(Effect.tap(() => touch(draft.licenseId))),
        update: (machine, components) =>
          Effect.andThen(touch(machine.licenseId), machines.update(machine, components)).pipe(Effect.tap(() => touch(machine.licenseId))),
        writeSeatChanges: (writes) => {
          const owned = [...writes.inserts, ...writes.updates]
          return Effect.andThen(touchAll(owned), machines.writeSeatChanges(writes)).pipe(Effect.tap(() => touchAll(owned)))
        },
        listForValidation: (licenseId, fingerprint) =>
          Effect.gen(function*() {
            // Inside a transaction (a seat check under the license lock) only the store's own answer will do.
            if ((yield* Effect.serviceOption(TouchedLicenses))._tag === "Some") {
              return yield* machines.listForValidation(licenseId, fingerprint)
            }
            const key = keyOfId.get(licenseId)
            const entry = key === undefined || !(yield* serving) ? undefined : byKey.get(key)
            if (entry === undefined) return yield* machines.listForValidation(licenseId, fingerprint)
            const active = entry.active ?? (yield* fill(entry, machines.listActive(licenseId), (list) => {
              entry.active = list
            }))
            if (fingerprint === null) return active
            let record = entry.fingerprints.get(fingerprint)
            if (record === undefined) {
              const found = yield* fill(entry, machines.findByFingerprint(licenseId, fingerprint), (m) => {
                if (entry.fingerprints.size < 64) entry.fingerprints.set(fingerprint, m ?? null)
              })
              record = found ?? null
            }
            return record === null || record.status === "active" ? active : [...active, record]
          })
      })

      /** Invalidates a policy now and when the current transaction ends (the same rule as a license's). */
      const touchPolicy = (policyId: number) =>
        Effect.map(Effect.serviceOption(TouchedPolicies), (touched) => {
          invalidatePolicy(policyId)
          if (touched._tag === "Some") touched.value.add(policyId)
        })

      /** A policy not served from memory: from the store, kept when nothing invalidated it meanwhile. */
      const loadPolicy = Effect.fnUntraced(function*(id: number) {
        if ((yield* Effect.serviceOption(TouchedLicenses))._tag === "Some" || !(yield* serving)) return yield* policyStore.findById(id)
        const now = yield* Clock.currentTimeMillis
        const generation = policyGenerations.get(id) ?? 0
        const startEpoch = epoch
        const policy = yield* policyStore.findById(id)
        if (startEpoch === epoch && (policyGenerations.get(id) ?? 0) === generation && policyById.size < maxEntries) {
          policyById.set(id, { policy, loadedAt: now })
        }
        return policy
      })

      const cachedPolicies = PolicyRepository.of({
        ...policyStore,
        // Every validate of a license with a policy asks for it: a hit is answered in one synchronous step (the
        // same checks as `loadPolicy`'s, read from the fiber), not a generator of several effects.
        findById: (id) =>
          Effect.withFiber((fiber) => {
            const cached = policyById.get(id)
            if (cached !== undefined && Option.isNone(Context.getOption(fiber.context, TouchedLicenses))) {
              const clock = fiber.getRef(Clock.Clock)
              if (fresh(cached, clock.currentTimeMillisUnsafe()) && feedAlive(aliveAsOf, feedTimeOf(clock), feedStale)) {
                return Effect.succeed(cached.policy)
              }
            }
            return loadPolicy(id)
          }),
        update: (policy) => Effect.andThen(touchPolicy(policy.id), policyStore.update(policy)).pipe(Effect.tap(() => touchPolicy(policy.id))),
        delete: (id) => Effect.andThen(touchPolicy(id), policyStore.delete(id)).pipe(Effect.tap(() => touchPolicy(id)))
      })

      const peek = (key: string, fingerprint: string | null, clock: Clock.Clock): CachedReads | undefined => {
        // As `serving` and `entryFor` read the clock; a silence to report or end goes the effectful way.
        if (silenceLogged || !feedAlive(aliveAsOf, Number(clock.monotonicTimeNanosUnsafe() / 1_000_000n), feedStale)) return undefined
        const now = clock.currentTimeMillisUnsafe()
        const entry = byKey.get(key)
        if (entry === undefined || !fresh(entry, now) || entry.active === undefined) return undefined
        const license = entry.license
        let policy: Policy | undefined
        if (license.policyId !== null) {
          const cached = policyById.get(license.policyId)
          if (cached === undefined || !fresh(cached, now)) return undefined
          policy = cached.policy
        }
        const active = entry.active
        if (fingerprint === null) return { license, machines: active, policy }
        const record = entry.fingerprints.get(fingerprint)
        if (record === undefined) return undefined
        return { license, machines: record === null || record.status === "active" ? active : [...active, record], policy }
      }

      const cachedStore = Store.of({
        ...store,
        transaction: (effect) =>
          Effect.flatMap(Effect.serviceOption(TouchedLicenses), (outer) => {
            // A nested transaction joins the outer one: its licenses are invalidated when the outer one ends.
            if (outer._tag === "Some") return store.transaction(effect)
            const touched = new Set<number>()
            const touchedPolicies = new Set<number>()
            return store.transaction(
              effect.pipe(Effect.provideService(TouchedLicenses, touched), Effect.provideService(TouchedPolicies, touchedPolicies))
            ).pipe(
              Effect.ensuring(Effect.sync(() => {
                touched.forEach(invalidate)
                touchedPolicies.forEach(invalidatePolicy)
              }))
            )
          })
      })

      return Context.make(Store, cachedStore).pipe(
        Context.add(LicenseRepository, cachedLicenses),
        Context.add(MachineRepository, cachedMachines),
        Context.add(PolicyRepository, cachedPolicies),
        Context.add(CachedValidationReads, { peek })
      )
    })
  )
