/**
 * The storage contract: one suite that every store runs (`storageContract(name, makeLayer)`). It checks the
 * ports' behaviour only through the ports, so it holds for the memory store, PGlite and PostgreSQL alike.
 *
 * Each case gets a fresh, empty store from `makeLayer`. Cases never keep a transaction open while another
 * store operation has to finish (a single-session store such as PGlite queues transactions).
 *
 * The event log: every store holds each entry until `prune` removes it, within a window of at least the newest
 * 1,000 entries (`Ports.ActivityLog`; the memory store holds only such a window, checked in its own tests). The
 * cases here write far fewer, so `count` sees every entry they wrote on every store.
 */
import { assert, describe, it } from "@effect/vitest"
import { ActivityRecorder, Analytics, Licensing, Model, Ports, ReleaseRules } from "@lm/domain"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Ref, type Scope } from "effect"
import { TestClock } from "effect/testing"
import {
  activity,
  apiKeyDraft,
  bareSubscriptionDraft,
  DAY,
  event,
  fullLicenseDraft,
  fullMachineDraft,
  generatorDraft,
  keyOf,
  licenseDraft,
  machineDraft,
  MINUTE,
  subscriptionDraft,
  T0
} from "./fixtures.js"

/** Every port a store provides. */
export type StorePorts = Ports.StorePorts

class Boom {
  readonly _tag = "Boom"
}

/**
 * The same service, but every operation lets other fibers run after it: concurrent flows then interleave at
 * each store call on every store (a store that answers synchronously would otherwise run them one by one).
 */
const yielding = <S extends object>(service: S): S =>
  new Proxy(service, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name)
      if (typeof value === "function") {
        return (...args: Array<unknown>) => Effect.tap(value.apply(target, args) as Effect.Effect<unknown>, () => Effect.yieldNow)
      }
      return Effect.isEffect(value) ? Effect.tap(value, () => Effect.yieldNow) : value
    }
  })

/** How many transactions the store wrapped by {@link counting} began. */
const transactions = { count: 0 }

/** The same store, counting its (outermost or nested) transactions in {@link transactions}. */
const counting = (store: Ports.Store["Service"]): Ports.Store["Service"] =>
  Ports.Store.of({
    ...store,
    transaction: (effect) => Effect.suspend(() => {
      transactions.count++
      return store.transaction(effect)
    })
  })

/** An event about a machine, as the seat changes write them. */
const seatEvent = (type: Model.DomainEvent["type"], licenseId: number, machineId: number, fingerprint: string): Model.DomainEvent => ({
  type,
  occurredAt: T0 + 1,
  licenseId,
  machineId,
  data: { license_key: keyOf(licenseId), fingerprint }
})

const isPositiveInt = (n: number) => Number.isInteger(n) && n > 0

/** The typed error an effect failed with (fails the test when it succeeded or died instead). */
const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "expected a failure")
    if (Exit.isSuccess(exit)) throw new Error("unreachable")
    const error = Cause.squash(exit.cause)
    return error as E
  })

/**
 * Registers the contract's cases against a store. `makeLayer` must return a layer that builds a fresh, empty
 * store each time it is built.
 */
export const storageContract = (name: string, makeLayer: () => Layer.Layer<StorePorts, unknown>): void => {
  describe(`storage contract: ${name}`, () => {
    const test = <A, E>(title: string, body: () => Effect.Effect<A, E, StorePorts | Scope.Scope>) =>
      // The clock is set before the store is built: moving the TestClock afterwards would replay every tick of
      // the store's own timers (connection pools) across the jump.
      it.effect(title, () => Effect.andThen(TestClock.setTime(T0), Effect.provide(Effect.suspend(body), Layer.fresh(makeLayer()))))

    describe("licenses", () => {
      test("insert and find round-trip every field, with values and with nulls", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const generators = yield* Ports.GeneratorRepository
          const generator = yield* generators.insert(generatorDraft())
          const full = fullLicenseDraft(generator.id)
          const inserted = yield* licenses.insert(full)
          assert.isTrue(isPositiveInt(inserted.id))
          assert.isTrue(Number.isInteger(inserted.revision))
          assert.deepStrictEqual(inserted, { ...full, id: inserted.id, revision: inserted.revision })
          assert.deepStrictEqual(yield* licenses.findByKey(full.key), inserted)
          assert.deepStrictEqual(yield* licenses.findById(inserted.id), inserted)

          const bare = licenseDraft({ key: keyOf(2) })
          const plain = yield* licenses.insert(bare)
          assert.deepStrictEqual(plain, { ...bare, id: plain.id, revision: plain.revision })
          assert.deepStrictEqual(yield* licenses.findByKey(bare.key), plain)
          assert.isTrue(plain.id > inserted.id)
        }))

      test("unknown keys and ids find nothing", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          yield* licenses.insert(licenseDraft())
          assert.isUndefined(yield* licenses.findByKey(keyOf(999)))
          assert.isUndefined(yield* licenses.findById(999_999))
        }))

      test("update writes every field", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const generators = yield* Ports.GeneratorRepository
          const generator = yield* generators.insert(generatorDraft())
          const original = yield* licenses.insert(licenseDraft())
          const changed: Model.License = { ...fullLicenseDraft(generator.id), key: original.key, id: original.id, revision: original.revision + 1 }
          const saved = yield* licenses.update(changed)
          assert.deepStrictEqual(saved, changed)
          assert.deepStrictEqual(yield* licenses.findById(original.id), changed)
          const back: Model.License = { ...original, revision: changed.revision + 1 }
          yield* licenses.update(back)
          assert.deepStrictEqual(yield* licenses.findByKey(original.key), back)
        }))

      test("a duplicate key fails with LicenseExists and leaves the first license as it was", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const first = yield* licenses.insert(licenseDraft({ userId: 1 }))
          const error = yield* failureOf(licenses.insert(licenseDraft({ userId: 2 })))
          assert.strictEqual(error._tag, "LicenseExists")
          assert.deepStrictEqual(yield* licenses.findByKey(first.key), first)
          const page = yield* licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc" })
          assert.strictEqual(page.total, 1)
        }))

      test("insertMany inserts all with distinct ids", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const drafts = [1, 2, 3].map((n) => licenseDraft({ key: keyOf(n), userId: n }))
          const rows = yield* licenses.insertMany(drafts)
          assert.deepStrictEqual(rows.map((l) => l.key), drafts.map((d) => d.key))
          assert.strictEqual(new Set(rows.map((l) => l.id)).size, 3)
          for (const row of rows) assert.deepStrictEqual(yield* licenses.findByKey(row.key), row)
        }))

      test("insertMany with a taken key fails with LicenseExists and writes none of the batch", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const generators = yield* Ports.GeneratorRepository
          const generator = yield* generators.insert(generatorDraft())
          yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
          const batch = [1, 2, 3, 4].map((n) => licenseDraft({ key: keyOf(n), state: "pending", generatorId: generator.id }))
          const error = yield* failureOf(licenses.insertMany(batch))
          assert.strictEqual(error._tag, "LicenseExists")
          for (const n of [1, 2, 4]) assert.isUndefined(yield* licenses.findByKey(keyOf(n)))
          assert.strictEqual(yield* licenses.poolSize(generator.id), 0)

          const twice = [5, 6, 5].map((n) => licenseDraft({ key: keyOf(n) }))
          assert.strictEqual((yield* failureOf(licenses.insertMany(twice)))._tag, "LicenseExists")
          assert.isUndefined(yield* licenses.findByKey(keyOf(5)))
          assert.isUndefined(yield* licenses.findByKey(keyOf(6)))
          const page = yield* licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc" })
          assert.strictEqual(page.total, 1)
        }))

      test("delete removes the license and its machines, and nothing else", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const doomed = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          const kept = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          const gone = yield* machines.insert(machineDraft(doomed.id, "fp-a"))
          const stays = yield* machines.insert(machineDraft(kept.id, "fp-a"))
          yield* licenses.delete(doomed.id)
          assert.isUndefined(yield* licenses.findById(doomed.id))
          assert.isUndefined(yield* licenses.findByKey(doomed.key))
          assert.isUndefined(yield* machines.findById(gone.id))
          assert.isUndefined(yield* machines.findByFingerprint(doomed.id, "fp-a"))
          assert.deepStrictEqual(yield* machines.findById(stays.id), stays)
          assert.deepStrictEqual(yield* licenses.findById(kept.id), kept)
          // The key is free again.
          const again = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          assert.notStrictEqual(again.id, doomed.id)
        }))

      test("keysInStates lists the keys of licenses in those states", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          yield* licenses.insert(licenseDraft({ key: keyOf(1), state: "issued" }))
          yield* licenses.insert(licenseDraft({ key: keyOf(2), state: "revoked" }))
          yield* licenses.insert(licenseDraft({ key: keyOf(3), state: "suspended" }))
          yield* licenses.insert(licenseDraft({ key: keyOf(4), state: "revoked" }))
          const keys = yield* licenses.keysInStates(["revoked", "suspended"])
          assert.deepStrictEqual([...keys].sort(), [keyOf(2), keyOf(3), keyOf(4)])
          assert.deepStrictEqual(yield* licenses.keysInStates(["terminated"]), [])
        }))
    })

    describe("generator pools", () => {
      const seedPool = Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const generators = yield* Ports.GeneratorRepository
        const generator = yield* generators.insert(generatorDraft())
        const other = yield* generators.insert(generatorDraft({ name: "Other" }))
        const pool = yield* licenses.insertMany(
          [1, 2, 3].map((n) => licenseDraft({ key: keyOf(n), state: "pending", source: "generator", generatorId: generator.id }))
        )
        yield* licenses.insert(licenseDraft({ key: keyOf(4), state: "issued", source: "generator", generatorId: generator.id }))
        yield* licenses.insert(licenseDraft({ key: keyOf(5), state: "pending", source: "generator", generatorId: other.id }))
        return { generator, other, pool }
      })

      test("poolSize counts pending keys of the generator only", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { generator, other } = yield* seedPool
          assert.strictEqual(yield* licenses.poolSize(generator.id), 3)
          assert.strictEqual(yield* licenses.poolSize(other.id), 1)
          assert.strictEqual(yield* licenses.poolSize(other.id + 1000), 0)
        }))

      test("claimFromPool hands out the oldest pending key; a drawn key leaves the pool", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const store = yield* Ports.Store
          const { generator, pool } = yield* seedPool
          const draw = store.transaction(
            Effect.gen(function*() {
              const claimed = yield* licenses.claimFromPool(generator.id)
              if (claimed === undefined) return undefined
              return yield* licenses.update({ ...claimed, state: "issued", source: "pool", revision: claimed.revision + 1 })
            })
          )
          const drawn = [yield* draw, yield* draw, yield* draw]
          assert.deepStrictEqual(drawn.map((l) => l?.key), pool.map((l) => l.key))
          assert.isUndefined(yield* draw)
          assert.strictEqual(yield* licenses.poolSize(generator.id), 0)
          assert.strictEqual((yield* licenses.findByKey(keyOf(1)))?.state, "issued")
        }))

      test("deletePool deletes the generator's pending keys only", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { generator, other } = yield* seedPool
          assert.strictEqual(yield* licenses.deletePool(generator.id), 3)
          assert.strictEqual(yield* licenses.poolSize(generator.id), 0)
          for (const n of [1, 2, 3]) assert.isUndefined(yield* licenses.findByKey(keyOf(n)))
          assert.strictEqual((yield* licenses.findByKey(keyOf(4)))?.state, "issued")
          assert.strictEqual(yield* licenses.poolSize(other.id), 1)
          assert.strictEqual(yield* licenses.deletePool(generator.id), 0)
        }))
    })

    describe("list", () => {
      /**
       * Six licenses: ids ascending in insertion order; created_at ties between 2 and 3; expiry with grace
       * boundaries around `AT`; machines that do or do not hold a seat at `AT`.
       */
      const AT = T0 + 100 * DAY
      const seed = Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const generators = yield* Ports.GeneratorRepository
        const generator = yield* generators.insert(generatorDraft())
        const rows = yield* Effect.forEach([
          // 1: perpetual, product 1, active seat without deadline
          licenseDraft({ key: "ALPHA-0001-AAAA-AAAA", productId: 1, orderId: 10, userId: 100, createdAt: T0 + 3 }),
          // 2: expired long before AT, product 1
          licenseDraft({ key: "ALPHA-0002-AAAA-AAAA", productId: 1, orderId: 10, userId: 200, createdAt: T0 + 1, expiresAt: AT - 10 * DAY }),
          // 3: grace ends exactly at AT (not ended), product 2
          licenseDraft({ key: "BRAVO-0003-AAAA-AAAA", productId: 2, orderId: 20, userId: 100, createdAt: T0 + 1, expiresAt: AT - 2 * DAY, graceDays: 2 }),
          // 4: grace ended 1 ms before AT, suspended
          licenseDraft({ key: "BRAVO-0004-AAAA-AAAA", state: "suspended", productId: 2, createdAt: T0 + 5, expiresAt: AT - DAY - 1, graceDays: 1 }),
          // 5: expires after AT, generator, seat deadline after AT
          licenseDraft({ key: "CHARLIE-0005-AAAA-AAAA", generatorId: generator.id, source: "generator", createdAt: T0 + 4, expiresAt: AT + DAY }),
          // 6: pending of the generator, perpetual, seat deadline exactly AT (no holder)
          licenseDraft({ key: "CHARLIE-0006-AAAA-AAAA", state: "pending", generatorId: generator.id, source: "generator", createdAt: T0 + 2 })
        ], (draft) => licenses.insert(draft))
        const [l1, l2, l3, , l5, l6] = rows
        yield* machines.insert(machineDraft(l1!.id, "holder-1"))
        yield* machines.insert(machineDraft(l2!.id, "gone-2", { status: "inactive", deactivatedAt: T0, deactivationReason: "client" }))
        yield* machines.insert(machineDraft(l3!.id, "lapsed-3", { seatDeadline: AT - 1 }))
        yield* machines.insert(machineDraft(l5!.id, "holder-5", { seatDeadline: AT + 1 }))
        yield* machines.insert(machineDraft(l6!.id, "edge-6", { seatDeadline: AT }))
        return { ids: rows.map((l) => l.id), generator }
      })

      const base = { page: 1, perPage: 100, orderBy: "id", order: "asc" } as const
      /** The positions (1-6) of the listed licenses in the seed. */
      const positions = (ids: ReadonlyArray<number>, page: { readonly items: ReadonlyArray<Model.License> }) =>
        page.items.map((l) => ids.indexOf(l.id) + 1)

      test("filters by state, product, order, user, generator and key prefix", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids, generator } = yield* seed
          const list = (q: Partial<Parameters<typeof licenses.list>[0]>) => Effect.map(licenses.list({ ...base, ...q }), (p) => positions(ids, p))
          assert.deepStrictEqual(yield* list({}), [1, 2, 3, 4, 5, 6])
          assert.deepStrictEqual(yield* list({ states: ["issued"] }), [1, 2, 3, 5])
          assert.deepStrictEqual(yield* list({ states: ["suspended", "pending"] }), [4, 6])
          assert.deepStrictEqual(yield* list({ states: [] }), [])
          assert.deepStrictEqual(yield* list({ productId: 1 }), [1, 2])
          assert.deepStrictEqual(yield* list({ orderId: 20 }), [3])
          assert.deepStrictEqual(yield* list({ userId: 100 }), [1, 3])
          assert.deepStrictEqual(yield* list({ generatorId: generator.id }), [5, 6])
          assert.deepStrictEqual(yield* list({ keyPrefix: "BRAVO" }), [3, 4])
          assert.deepStrictEqual(yield* list({ keyPrefix: "CHARLIE-0006" }), [6])
          assert.deepStrictEqual(yield* list({ keyPrefix: "RAVO" }), [])
          assert.deepStrictEqual(yield* list({ productId: 2, states: ["issued"] }), [3])
        }))

      test("filters by expiry (strict bounds; licenses without expiry never match)", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids } = yield* seed
          const list = (q: Partial<Parameters<typeof licenses.list>[0]>) => Effect.map(licenses.list({ ...base, ...q }), (p) => positions(ids, p))
          assert.deepStrictEqual(yield* list({ expiresBefore: AT }), [2, 3, 4])
          assert.deepStrictEqual(yield* list({ expiresBefore: AT - 2 * DAY }), [2])
          assert.deepStrictEqual(yield* list({ expiresAfter: AT - 2 * DAY }), [4, 5])
          assert.deepStrictEqual(yield* list({ expiresAfter: AT - 20 * DAY, expiresBefore: AT }), [2, 3, 4])
        }))

      test("expiredAt compares the grace end (expires_at + grace_days) with the instant", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids } = yield* seed
          const list = (q: Partial<Parameters<typeof licenses.list>[0]>) => Effect.map(licenses.list({ ...base, ...q }), (p) => positions(ids, p))
          assert.deepStrictEqual(yield* list({ expiredAt: { at: AT, value: true } }), [2, 4])
          assert.deepStrictEqual(yield* list({ expiredAt: { at: AT, value: false } }), [1, 3, 5, 6])
          assert.deepStrictEqual(yield* list({ expiredAt: { at: AT + 1, value: true } }), [2, 3, 4])
          assert.deepStrictEqual(yield* list({ states: ["issued"], expiredAt: { at: AT, value: true } }), [2])
        }))

      test("hasSeatHolderAt looks for an active machine whose deadline is null or after the instant", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids } = yield* seed
          const list = (q: Partial<Parameters<typeof licenses.list>[0]>) => Effect.map(licenses.list({ ...base, ...q }), (p) => positions(ids, p))
          assert.deepStrictEqual(yield* list({ hasSeatHolderAt: { at: AT, value: true } }), [1, 5])
          assert.deepStrictEqual(yield* list({ hasSeatHolderAt: { at: AT, value: false } }), [2, 3, 4, 6])
          assert.deepStrictEqual(yield* list({ hasSeatHolderAt: { at: AT - 1, value: true } }), [1, 5, 6])
          assert.deepStrictEqual(
            yield* list({ states: ["issued"], expiredAt: { at: AT, value: false }, hasSeatHolderAt: { at: AT, value: false } }),
            [3]
          )
        }))

      test("countEach answers each filter's total in one call, in the filters' order", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const { ids, generator } = yield* seed
          // A second seat holder on license 1: it still counts once.
          yield* machines.insert(machineDraft(ids[0]!, "holder-1b"))
          const notExpired = { states: ["issued"], expiredAt: { at: AT, value: false } } as const
          // Seat-holder filters at one time (the overview's active and inactive) ...
          assert.deepStrictEqual(
            yield* licenses.countEach([
              {},
              { ...notExpired, hasSeatHolderAt: { at: AT, value: true } },
              { ...notExpired, hasSeatHolderAt: { at: AT, value: false } },
              { states: ["issued"], expiredAt: { at: AT, value: true } },
              { states: ["pending"] },
              { expiresAfter: AT - 20 * DAY, expiresBefore: AT },
              { generatorId: generator.id, keyPrefix: "CHARLIE-0006" },
              { states: [] }
            ]),
            [6, 2, 1, 1, 1, 3, 1, 0]
          )
          // ... and at two times.
          assert.deepStrictEqual(
            yield* licenses.countEach([{ hasSeatHolderAt: { at: AT, value: true } }, { hasSeatHolderAt: { at: AT - 1, value: true } }]),
            [2, 3]
          )
          assert.deepStrictEqual(yield* licenses.countEach([]), [])
        }))

      test("orders by id, created_at or expires_at, either way, ties broken by id; no expiry sorts as the latest", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids } = yield* seed
          const list = (q: Partial<Parameters<typeof licenses.list>[0]>) => Effect.map(licenses.list({ ...base, ...q }), (p) => positions(ids, p))
          assert.deepStrictEqual(yield* list({ order: "desc" }), [6, 5, 4, 3, 2, 1])
          assert.deepStrictEqual(yield* list({ orderBy: "created_at" }), [2, 3, 6, 1, 5, 4])
          assert.deepStrictEqual(yield* list({ orderBy: "created_at", order: "desc" }), [4, 5, 1, 6, 3, 2])
          assert.deepStrictEqual(yield* list({ orderBy: "expires_at" }), [2, 3, 4, 5, 1, 6])
          assert.deepStrictEqual(yield* list({ orderBy: "expires_at", order: "desc" }), [6, 1, 5, 4, 3, 2])
        }))

      test("pages through the matches and reports the total", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const { ids } = yield* seed
          const page = (n: number, q: Partial<Parameters<typeof licenses.list>[0]> = {}) =>
            Effect.map(licenses.list({ ...base, perPage: 4, page: n, ...q }), (p) => ({ at: positions(ids, p), total: p.total }))
          assert.deepStrictEqual(yield* page(1), { at: [1, 2, 3, 4], total: 6 })
          assert.deepStrictEqual(yield* page(2), { at: [5, 6], total: 6 })
          assert.deepStrictEqual(yield* page(3), { at: [], total: 6 })
          assert.deepStrictEqual(yield* page(1, { perPage: 2, order: "desc", states: ["issued"] }), { at: [5, 3], total: 4 })
          assert.deepStrictEqual(yield* page(2, { perPage: 2, order: "desc", states: ["issued"] }), { at: [2, 1], total: 4 })
        }))
    })

    describe("machines", () => {
      test("insert and find round-trip every field; components get ids", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const license = yield* licenses.insert(licenseDraft())
          const draft = fullMachineDraft(license.id)
          const machine = yield* machines.insert(draft)
          assert.isTrue(isPositiveInt(machine.id))
          assert.strictEqual(machine.components.length, 2)
          for (const component of machine.components) assert.isTrue(isPositiveInt(component.id))
          assert.notStrictEqual(machine.components[0]!.id, machine.components[1]!.id)
          assert.deepStrictEqual(machine, {
            ...draft,
            id: machine.id,
            components: draft.components.map((c, i) => ({ ...c, id: machine.components[i]!.id }))
          })
          assert.deepStrictEqual(yield* machines.findById(machine.id), machine)
          assert.deepStrictEqual(yield* machines.findByFingerprint(license.id, draft.fingerprint), machine)

          const bare = machineDraft(license.id, "fp-bare")
          const plain = yield* machines.insert(bare)
          assert.deepStrictEqual(plain, { ...bare, id: plain.id, components: [] })
          assert.deepStrictEqual(yield* machines.findByFingerprint(license.id, "fp-bare"), plain)
          assert.isUndefined(yield* machines.findByFingerprint(license.id, "fp-unknown"))
          assert.isUndefined(yield* machines.findByFingerprint(license.id + 1000, "fp-bare"))
          assert.isUndefined(yield* machines.findById(999_999))
        }))

      test("update writes every field; components are replaced only when given", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const license = yield* licenses.insert(licenseDraft())
          const machine = yield* machines.insert(fullMachineDraft(license.id))
          const changed = {
            ...machine,
            name: null,
            hostname: "renamed",
            status: "active" as const,
            deactivatedAt: null,
            deactivationReason: null,
            lastHeartbeatAt: T0 + 99,
            leaseExpiresAt: null,
            seatDeadline: null,
            meta: { moved: true }
          }
          const kept = yield* machines.update(changed)
          assert.deepStrictEqual(kept, changed)
          assert.deepStrictEqual(yield* machines.findById(machine.id), changed)

          const replaced = yield* machines.update(changed, [{ kind: "mac", fingerprint: "aa:bb", name: "eth0" }])
          assert.strictEqual(replaced.components.length, 1)
          assert.deepStrictEqual({ ...replaced.components[0]!, id: 0 }, { id: 0, kind: "mac", fingerprint: "aa:bb", name: "eth0" })
          assert.isTrue(isPositiveInt(replaced.components[0]!.id))
          assert.deepStrictEqual(yield* machines.findById(machine.id), replaced)

          const emptied = yield* machines.update(replaced, [])
          assert.deepStrictEqual(emptied.components, [])
          assert.deepStrictEqual((yield* machines.findById(machine.id))?.components, [])
        }))

      test("writeSeatChanges inserts, updates and appends events in one go; events of inserted machines get their ids", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const outbox = yield* Ports.EventOutbox
          const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          assert.deepStrictEqual(yield* machines.writeSeatChanges({ inserts: [], updates: [], events: [] }), [])
          const old = yield* machines.insert(fullMachineDraft(a.id))
          const seqBefore = yield* outbox.revocationSeq
          const drafts = [machineDraft(b.id, "w-1", { meta: { k: "v" } }), machineDraft(a.id, "w-2", { leaseExpiresAt: T0 + DAY, seatDeadline: T0 + DAY })]
          const changedOld = { ...old, status: "inactive" as const, deactivatedAt: T0 + 1, deactivationReason: "client" as const, seatDeadline: null }
          const inserted = yield* store.transaction(machines.writeSeatChanges({
            inserts: drafts,
            updates: [changedOld],
            events: [
              { event: seatEvent("machine.activated", b.id, 0, "w-1"), insertIndex: 0 },
              { event: seatEvent("machine.deactivated", a.id, old.id, old.fingerprint) },
              { event: seatEvent("machine.activated", a.id, 0, "w-2"), insertIndex: 1 }
            ]
          }))
          assert.strictEqual(inserted.length, 2)
          inserted.forEach((machine, i) => assert.deepStrictEqual(machine, { ...drafts[i]!, id: machine.id, components: [] }))
          for (const machine of inserted) assert.deepStrictEqual(yield* machines.findById(machine.id), machine)
          assert.deepStrictEqual(yield* machines.findById(old.id), changedOld)
          const written = yield* outbox.readAfter(0, 100)
          assert.deepStrictEqual(written.map((e) => [e.type, e.licenseId, e.machineId, e.data.fingerprint]), [
            ["machine.activated", b.id, inserted[0]!.id, "w-1"],
            ["machine.deactivated", a.id, old.id, old.fingerprint],
            ["machine.activated", a.id, inserted[1]!.id, "w-2"]
          ])
          assert.isTrue(written[0]!.id < written[1]!.id && written[1]!.id < written[2]!.id)
          assert.strictEqual(yield* outbox.revocationSeq, seqBefore)
          // A revoking event advances the revocation sequence, as append does.
          yield* store.transaction(machines.writeSeatChanges({
            inserts: [],
            updates: [],
            events: [{ event: seatEvent("machine.revoked", a.id, old.id, old.fingerprint) }]
          }))
          assert.strictEqual(yield* outbox.revocationSeq, seqBefore + 1)
          // A duplicate (license, fingerprint) fails the whole write: nothing of it stays.
          const failed = yield* Effect.exit(store.transaction(machines.writeSeatChanges({
            inserts: [machineDraft(a.id, "w-3"), machineDraft(a.id, "w-2")],
            updates: [{ ...changedOld, name: "should not stay" }],
            events: [{ event: seatEvent("machine.activated", a.id, 0, "w-3"), insertIndex: 0 }]
          })))
          assert.isTrue(Exit.isFailure(failed))
          assert.isUndefined(yield* machines.findByFingerprint(a.id, "w-3"))
          assert.deepStrictEqual(yield* machines.findById(old.id), changedOld)
          assert.strictEqual((yield* outbox.readAfter(0, 100)).length, 4)
        }))

      test("listForSeatChanges: the active machines of each license named plus each named fingerprint's record, once each, in id order", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          const c = yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
          const a1 = yield* machines.insert(fullMachineDraft(a.id))
          const a2 = yield* machines.insert(machineDraft(a.id, "a-off", { status: "inactive", deactivatedAt: T0, deactivationReason: "client" }))
          const a3 = yield* machines.insert(machineDraft(a.id, "a-revoked", { status: "revoked" }))
          const b1 = yield* machines.insert(machineDraft(b.id, "b-on"))
          const b2 = yield* machines.insert(machineDraft(b.id, "b-off", { status: "inactive" }))
          yield* machines.insert(machineDraft(c.id, "c-on"))
          assert.deepStrictEqual(yield* machines.listForSeatChanges([]), [])
          const found = yield* machines.listForSeatChanges([
            { licenseId: a.id, fingerprint: "a-off" },
            { licenseId: a.id, fingerprint: a1.fingerprint },
            { licenseId: a.id, fingerprint: "unknown" },
            { licenseId: b.id, fingerprint: "b-off" },
            { licenseId: b.id, fingerprint: "a-revoked" }
          ])
          assert.deepStrictEqual(found, [a1, a2, b1, b2])
          assert.isFalse(found.some((m) => m.id === a3.id))
          assert.deepStrictEqual(found[0]!.components, a1.components)
        }))

      test("a fingerprint is unique per license, not across licenses", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          const first = yield* machines.insert(machineDraft(a.id, "fp-1", { name: "first" }))
          const duplicate = yield* Effect.exit(machines.insert(machineDraft(a.id, "fp-1", { name: "second" })))
          assert.isTrue(Exit.isFailure(duplicate))
          assert.deepStrictEqual(yield* machines.findByFingerprint(a.id, "fp-1"), first)
          assert.strictEqual((yield* machines.list(a.id, { page: 1, perPage: 10 })).total, 1)
          const elsewhere = yield* machines.insert(machineDraft(b.id, "fp-1"))
          assert.strictEqual(elsewhere.licenseId, b.id)
        }))

      test("listActive, listActiveOf, listForValidation, list and listRevoked select by status", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const a = yield* licenses.insert(licenseDraft({ key: keyOf(1) }))
          const b = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          const c = yield* licenses.insert(licenseDraft({ key: keyOf(3) }))
          const a1 = yield* machines.insert(machineDraft(a.id, "a1"))
          const a2 = yield* machines.insert(machineDraft(a.id, "a2", { status: "inactive", deactivatedAt: T0, deactivationReason: "client" }))
          const a3 = yield* machines.insert(machineDraft(a.id, "a3", { status: "revoked", deactivatedAt: T0, deactivationReason: "admin" }))
          const a4 = yield* machines.insert(machineDraft(a.id, "a4", { seatDeadline: T0 - 1 }))
          const b1 = yield* machines.insert(machineDraft(b.id, "b1"))
          const c1 = yield* machines.insert(machineDraft(c.id, "c1"))
          const ids = (ms: ReadonlyArray<{ readonly id: number }>) => ms.map((m) => m.id).sort((x, y) => x - y)

          // Active status, whether or not the seat is still held.
          assert.deepStrictEqual(ids(yield* machines.listActive(a.id)), [a1.id, a4.id])
          assert.deepStrictEqual(yield* machines.listActive(a.id + 1000), [])
          assert.deepStrictEqual(ids(yield* machines.listActiveOf([a.id, b.id])), [a1.id, a4.id, b1.id])
          assert.deepStrictEqual(yield* machines.listActiveOf([]), [])
          assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, null)), [a1.id, a4.id])
          assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "a3")), [a1.id, a3.id, a4.id])
          assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "a1")), [a1.id, a4.id])
          assert.deepStrictEqual(ids(yield* machines.listForValidation(a.id, "nope")), [a1.id, a4.id])

          const all = yield* machines.list(a.id, { page: 1, perPage: 10 })
          assert.deepStrictEqual({ ids: ids(all.items), total: all.total }, { ids: [a1.id, a2.id, a3.id, a4.id], total: 4 })
          const inactive = yield* machines.list(a.id, { page: 1, perPage: 10, status: "inactive" })
          assert.deepStrictEqual({ ids: ids(inactive.items), total: inactive.total }, { ids: [a2.id], total: 1 })
          const paged = yield* machines.list(a.id, { page: 2, perPage: 3 })
          assert.strictEqual(paged.total, 4)
          assert.strictEqual(paged.items.length, 1)
          assert.deepStrictEqual(yield* machines.listRevoked, [{ id: a3.id, fingerprint: "a3" }])
          assert.deepStrictEqual(ids(yield* machines.listActive(c.id)), [c1.id])
        }))

      test("claimExpired claims active machines whose deadline is at or before now, up to the limit", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const license = yield* licenses.insert(licenseDraft())
          const due1 = yield* machines.insert(machineDraft(license.id, "due-1", { seatDeadline: T0 - 2 * MINUTE }))
          const due2 = yield* machines.insert(machineDraft(license.id, "due-2", { seatDeadline: T0 }))
          yield* machines.insert(machineDraft(license.id, "later", { seatDeadline: T0 + 1 }))
          yield* machines.insert(machineDraft(license.id, "never", { seatDeadline: null }))
          yield* machines.insert(
            machineDraft(license.id, "off", { status: "inactive", seatDeadline: T0 - MINUTE, deactivatedAt: T0, deactivationReason: "client" })
          )
          const claimed = yield* store.transaction(machines.claimExpired(T0, 10))
          assert.deepStrictEqual(claimed.map((m) => m.id).sort((a, b) => a - b), [due1.id, due2.id])
          const one = yield* store.transaction(machines.claimExpired(T0, 1))
          assert.strictEqual(one.length, 1)
          assert.deepStrictEqual(yield* store.transaction(machines.claimExpired(T0 - 3 * MINUTE, 10)), [])
        }))
    })

    describe("releases", () => {
      const releaseDraft = (productId: number, version: string, overrides: Partial<Model.ReleaseDraft> = {}): Model.ReleaseDraft => ({
        productId,
        version,
        versionKey: ReleaseRules.versionSortKey(ReleaseRules.strictVersion(version)!),
        channel: "stable",
        changelog: null,
        minAppVersion: null,
        filename: null,
        size: null,
        sha256: null,
        contentType: null,
        artifactUrl: null,
        artifactKey: null,
        releasedAt: T0,
        createdAt: T0,
        ...overrides
      })

      test("insert and find round-trip every field; the same product and version again is ReleaseExists, rolled back", () =>
        Effect.gen(function*() {
          const releases = yield* Ports.ReleaseRepository
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const full = releaseDraft(7, "1.2.3+build.5", {
            channel: "beta",
            changelog: "Fixes",
            minAppVersion: "1.0.0",
            filename: "app-1.2.3.tar.gz",
            size: 5_000_000_000,
            sha256: "a".repeat(64),
            contentType: "application/gzip",
            artifactKey: "ab/cdef",
            releasedAt: T0 - DAY,
            createdAt: T0 + 1
          })
          const r1 = yield* releases.insert(full)
          assert.isTrue(isPositiveInt(r1.id))
          assert.deepStrictEqual(r1, { ...full, id: r1.id })
          assert.deepStrictEqual(yield* releases.findById(r1.id), r1)
          assert.deepStrictEqual(yield* releases.findByVersion(7, "1.2.3+build.5"), r1)
          assert.isUndefined(yield* releases.findByVersion(8, "1.2.3+build.5"))
          const external = yield* releases.insert(releaseDraft(8, "1.2.3+build.5", { artifactUrl: "https://cdn.example.com/a.zip" }))
          assert.strictEqual(external.artifactUrl, "https://cdn.example.com/a.zip")
          const before = (yield* outbox.readAfter(0, 100)).length
          const failed = yield* failureOf(store.transaction(Effect.andThen(
            outbox.append([event("license.created", 1)]),
            releases.insert(releaseDraft(7, "1.2.3+build.5"))
          )))
          assert.strictEqual(failed._tag, "ReleaseExists")
          assert.strictEqual((yield* outbox.readAfter(0, 100)).length, before)
          assert.strictEqual((yield* releases.list({ page: 1, perPage: 10 })).total, 2)
        }))

      test("lists newest semver first (pre-releases below their release, numeric identifiers by number), filtered", () =>
        Effect.gen(function*() {
          const releases = yield* Ports.ReleaseRepository
          const inserted: Array<[string, Model.ReleaseChannel]> = [
            ["1.0.0", "stable"],
            ["10.0.0", "stable"],
            ["2.0.0-rc.10", "rc"],
            ["2.0.0-rc.2", "rc"],
            ["2.0.0-beta", "beta"],
            ["2.0.0-beta.1", "beta"],
            ["2.0.0-alpha", "alpha"],
            ["2.0.0-1", "dev"],
            ["2.0.0", "stable"],
            ["1.10.0", "stable"],
            ["1.9.0", "stable"]
          ]
          for (const [version, channel] of inserted) yield* releases.insert(releaseDraft(1, version, { channel }))
          yield* releases.insert(releaseDraft(2, "99.0.0"))
          const all = yield* releases.list({ productId: 1, page: 1, perPage: 100 })
          assert.deepStrictEqual(all.items.map((r) => r.version), [
            "10.0.0",
            "2.0.0",
            "2.0.0-rc.10",
            "2.0.0-rc.2",
            "2.0.0-beta.1",
            "2.0.0-beta",
            "2.0.0-alpha",
            "2.0.0-1",
            "1.10.0",
            "1.9.0",
            "1.0.0"
          ])
          assert.strictEqual(all.total, 11)
          const stableAndRc = yield* releases.list({ productId: 1, channels: ["stable", "rc"], page: 2, perPage: 3 })
          assert.deepStrictEqual(stableAndRc.items.map((r) => r.version), ["2.0.0-rc.2", "1.10.0", "1.9.0"])
          assert.strictEqual(stableAndRc.total, 7)
          assert.strictEqual((yield* releases.list({ channels: [], page: 1, perPage: 10 })).total, 0)
          assert.strictEqual((yield* releases.list({ page: 1, perPage: 10 })).total, 12)
        }))
    })

    describe("generators, API keys, signing keys", () => {
      test("generators: insert, find, list, update and delete round-trip every field", () =>
        Effect.gen(function*() {
          const generators = yield* Ports.GeneratorRepository
          const full = generatorDraft({
            name: "Full",
            charset: "ABCDEFGHJKLMNPQR",
            chunkLength: 5,
            prefix: "PRO",
            productId: 9,
            defaultMaxActivations: 3,
            defaultValidDays: 365,
            defaultOverageStrategy: "allow_2x",
            defaultIsFloating: true,
            createdAt: T0 + 1,
            updatedAt: T0 + 2
          })
          const g1 = yield* generators.insert(full)
          const g2 = yield* generators.insert(generatorDraft())
          assert.isTrue(isPositiveInt(g1.id))
          assert.deepStrictEqual(g1, { ...full, id: g1.id })
          assert.deepStrictEqual(yield* generators.findById(g1.id), g1)
          assert.deepStrictEqual(yield* generators.findById(g2.id), { ...generatorDraft(), id: g2.id })
          const page = yield* generators.list({ page: 1, perPage: 1 })
          assert.deepStrictEqual({ ids: page.items.map((g) => g.id), total: page.total }, { ids: [g1.id], total: 2 })
          const changed = { ...g1, name: "Renamed", productId: null, defaultIsFloating: false, updatedAt: T0 + 3 }
          assert.deepStrictEqual(yield* generators.update(changed), changed)
          assert.deepStrictEqual(yield* generators.findById(g1.id), changed)
          yield* generators.delete(g1.id)
          assert.isUndefined(yield* generators.findById(g1.id))
          assert.strictEqual((yield* generators.list({ page: 1, perPage: 10 })).total, 1)
        }))

      test("API keys: insert, find by hash, list, touch, count and delete", () =>
        Effect.gen(function*() {
          const keys = yield* Ports.ApiKeyRepository
          assert.strictEqual(yield* keys.count, 0)
          const k1 = yield* keys.insert(apiKeyDraft(1, { scope: "read", lastAccessAt: T0 + 5 }))
          const k2 = yield* keys.insert(apiKeyDraft(2))
          assert.deepStrictEqual(k1, { ...apiKeyDraft(1, { scope: "read", lastAccessAt: T0 + 5 }), id: k1.id })
          assert.deepStrictEqual(yield* keys.findByConsumerKeyHash("ck-hash-2"), k2)
          assert.isUndefined(yield* keys.findByConsumerKeyHash("ck-hash-3"))
          assert.strictEqual(yield* keys.count, 2)
          const page = yield* keys.list({ page: 2, perPage: 1 })
          assert.deepStrictEqual({ ids: page.items.map((k) => k.id), total: page.total }, { ids: [k2.id], total: 2 })
          yield* keys.touch(k2.id, T0 + 60_000)
          assert.strictEqual((yield* keys.findByConsumerKeyHash("ck-hash-2"))?.lastAccessAt, T0 + 60_000)
          assert.isTrue(yield* keys.delete(k1.id))
          assert.isFalse(yield* keys.delete(k1.id))
          assert.isUndefined(yield* keys.findByConsumerKeyHash("ck-hash-1"))
          assert.strictEqual(yield* keys.count, 1)
        }))

      test("signing keys: a new current key keeps the old ones listed but not current", () =>
        Effect.gen(function*() {
          const signing = yield* Ports.SigningKeyRepository
          assert.deepStrictEqual(yield* signing.list, [])
          const k1 = { kid: "k1", seed: "c2VlZDE=", publicKey: "cHViMQ==", current: true, createdAt: T0 }
          const k2 = { kid: "k2", seed: "c2VlZDI=", publicKey: "cHViMg==", current: true, createdAt: T0 + 1 }
          const k3 = { kid: "k3", seed: "c2VlZDM=", publicKey: "cHViMw==", current: false, createdAt: T0 + 2 }
          yield* signing.insert(k1)
          assert.deepStrictEqual(yield* signing.list, [k1])
          yield* signing.insert(k2)
          assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false }, k2])
          yield* signing.insert(k3)
          assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false }, k2, k3])
        }))

      test("signing keys: a seed is replaced in place; a key that is not current is retired, the current one never", () =>
        Effect.gen(function*() {
          const signing = yield* Ports.SigningKeyRepository
          const k1 = { kid: "k1", seed: "c2VlZDE=", publicKey: "cHViMQ==", current: true, createdAt: T0 }
          const k2 = { kid: "k2", seed: "c2VlZDI=", publicKey: "cHViMg==", current: true, createdAt: T0 + 1 }
          yield* signing.insert(k1)
          yield* signing.insert(k2)
          yield* signing.replaceSeed("k1", "lm-sealed:v1:abcd:xyz")
          assert.deepStrictEqual(yield* signing.list, [{ ...k1, current: false, seed: "lm-sealed:v1:abcd:xyz" }, k2])
          assert.isFalse(yield* signing.retire("k2"))
          assert.isFalse(yield* signing.retire("nope"))
          assert.isTrue(yield* signing.retire("k1"))
          assert.isFalse(yield* signing.retire("k1"))
          assert.deepStrictEqual(yield* signing.list, [k2])
        }))
    })

    describe("outbox and event log", () => {
      test("events are read back in order with increasing ids, in pages", () =>
        Effect.gen(function*() {
          const outbox = yield* Ports.EventOutbox
          assert.deepStrictEqual(yield* outbox.readAfter(0, 10), [])
          yield* outbox.append([event("license.created", 1, 5), event("machine.activated", 2)])
          yield* outbox.append([])
          yield* outbox.append([event("license.updated", 3, 5)])
          const all = yield* outbox.readAfter(0, 10)
          assert.deepStrictEqual(all.map(({ id: _, ...e }) => e), [event("license.created", 1, 5), event("machine.activated", 2), event("license.updated", 3, 5)])
          const ids = all.map((e) => e.id)
          assert.isTrue(ids.every(isPositiveInt))
          assert.isTrue(ids[0]! < ids[1]! && ids[1]! < ids[2]!)
          assert.deepStrictEqual(yield* outbox.readAfter(0, 2), all.slice(0, 2))
          assert.deepStrictEqual(yield* outbox.readAfter(ids[1]!, 10), all.slice(2))
          assert.deepStrictEqual(yield* outbox.readAfter(ids[2]!, 10), [])
        }))

      test("the revocation seq grows on a revoking event and not on others", () =>
        Effect.gen(function*() {
          const outbox = yield* Ports.EventOutbox
          const start = yield* outbox.revocationSeq
          yield* outbox.append([event("license.created", 1), event("machine.activated", 2)])
          assert.strictEqual(yield* outbox.revocationSeq, start)
          let last = start
          for (const type of ["license.revoked", "license.suspended", "license.reinstated", "license.terminated", "license.deleted", "machine.revoked"] as const) {
            yield* outbox.append([event("license.updated", 3), event(type, 4)])
            const now = yield* outbox.revocationSeq
            assert.isTrue(now > last, `${type} advances the seq`)
            last = now
          }
          yield* outbox.append([event("license.renewed", 5), event("machine.deactivated", 6), event("generator.keys_generated", 7)])
          assert.strictEqual(yield* outbox.revocationSeq, last)
        }))

      test("the activity log keeps entries and counts them, by license when asked", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          assert.strictEqual(yield* log.count({}), 0)
          yield* log.record([activity(1), activity(1, "license_expired"), activity(2), activity(null, "license_not_found")])
          yield* log.record([])
          yield* log.record([activity(2)])
          assert.strictEqual(yield* log.count({}), 5)
          assert.strictEqual(yield* log.count({ licenseId: 1 }), 2)
          assert.strictEqual(yield* log.count({ licenseId: 2 }), 2)
          assert.strictEqual(yield* log.count({ licenseId: 3 }), 0)
        }))

      test("prune deletes at most `limit` entries older than the time, oldest first, and answers how many", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          const at = (licenseId: number, time: number): Model.ActivityEntry => ({ ...activity(licenseId), at: time })
          // Written in time order, one batch per day, as the recorder writes them.
          yield* log.record([at(1, T0 - 3 * DAY), at(2, T0 - 3 * DAY)])
          yield* log.record([at(1, T0 - 2 * DAY)])
          yield* log.record([at(1, T0 - DAY), at(2, T0 - DAY)])
          yield* log.record([at(1, T0)])
          const cutoff = T0 - DAY
          assert.strictEqual(yield* log.prune(cutoff, 2), 2)
          assert.strictEqual(yield* log.count({}), 4)
          assert.strictEqual(yield* log.count({ licenseId: 2 }), 1, "the oldest went first")
          assert.strictEqual(yield* log.prune(cutoff, 2), 1, "fewer than the limit: none older is left")
          assert.strictEqual(yield* log.prune(cutoff, 2), 0)
          // Entries at or after the time stay.
          assert.strictEqual(yield* log.count({}), 3)
          assert.strictEqual(yield* log.count({ licenseId: 1 }), 2)
          assert.strictEqual(yield* log.count({ licenseId: 2 }), 1)
          assert.strictEqual(yield* log.prune(T0 + 1, 1_000), 3)
          assert.strictEqual(yield* log.count({}), 0)
        }))

      test("ping answers", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          yield* store.ping
        }))
    })

    describe("analytics", () => {
      const HOUR = 3_600_000
      const H0 = Analytics.bucketStart(T0, "hour")
      const entry = (licenseId: number | null, overrides: Partial<Model.ActivityEntry> = {}): Model.ActivityEntry => ({
        ...activity(licenseId),
        ...overrides
      })
      const zero = { valid: 0, invalid: 0, refused: 0, activations: 0 }
      /** Every period's window as the analytics set it at `now`. */
      const windowsAt = (now: number) => Model.analyticsPeriods.map((period) => ({ period, from: Analytics.periodStart(period, now) }))

      test("writing the event log adds its hourly counters, per license and per product; pruning entries leaves them", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          const repo = yield* Ports.AnalyticsRepository
          yield* log.record([
            entry(1, { productId: 7 }),
            entry(1, { productId: 7, result: "license_expired" }),
            entry(2),
            entry(null, { result: "license_not_found" }),
            entry(1, { productId: 7, kind: "activate", result: "activated", at: T0 + HOUR })
          ])
          yield* log.record([entry(1, { productId: 7, at: T0 + HOUR }), entry(2, { kind: "heartbeat", result: "machine_inactive", at: T0 + HOUR })])
          const all = yield* repo.hourly({ scope: "product", from: H0, to: H0 + 2 * HOUR })
          assert.deepStrictEqual(all, [
            { hour: H0, valid: 2, invalid: 2, refused: 2, activations: 0 },
            { hour: H0 + HOUR, valid: 1, invalid: 0, refused: 1, activations: 1 }
          ])
          assert.deepStrictEqual(yield* repo.hourly({ scope: "product", scopeId: 7, from: H0, to: H0 + 2 * HOUR }), [
            { hour: H0, valid: 1, invalid: 1, refused: 1, activations: 0 },
            { hour: H0 + HOUR, valid: 1, invalid: 0, refused: 0, activations: 1 }
          ])
          assert.deepStrictEqual(yield* repo.hourly({ scope: "product", scopeId: Analytics.noProduct, from: H0, to: H0 + HOUR }), [
            { hour: H0, ...zero, valid: 1, invalid: 1, refused: 1 }
          ])
          assert.deepStrictEqual(yield* repo.hourly({ scope: "license", scopeId: 2, from: H0, to: H0 + 2 * HOUR }), [
            { hour: H0, ...zero, valid: 1 },
            { hour: H0 + HOUR, ...zero, refused: 1 }
          ])
          assert.deepStrictEqual(yield* repo.hourly({ scope: "license", scopeId: 1, from: H0 + HOUR, to: H0 + 2 * HOUR }), [
            { hour: H0 + HOUR, valid: 1, invalid: 0, refused: 0, activations: 1 }
          ], "the range is [from, to)")
          assert.deepStrictEqual(yield* repo.hourly({ scope: "license", scopeId: 3, from: H0, to: H0 + 2 * HOUR }), [])
          assert.strictEqual(yield* log.prune(T0 + 2 * HOUR, 1_000), 7)
          assert.deepStrictEqual(yield* repo.hourly({ scope: "product", from: H0, to: H0 + 2 * HOUR }), all)
        }))

      test("counters written in a transaction that fails are not kept", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const log = yield* Ports.ActivityLog
          const repo = yield* Ports.AnalyticsRepository
          yield* log.record([entry(1)])
          const exit = yield* Effect.exit(store.transaction(Effect.andThen(log.record([entry(1), entry(1)]), Effect.fail(new Boom()))))
          assert.isTrue(Exit.isFailure(exit))
          assert.deepStrictEqual(yield* repo.hourly({ scope: "license", scopeId: 1, from: H0, to: H0 + HOUR }), [{ hour: H0, ...zero, valid: 1 }])
        }))

      test("top licenses, busy hours and distinct values per license", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          const repo = yield* Ports.AnalyticsRepository
          const many = (n: number, e: (i: number) => Model.ActivityEntry) => Array.from({ length: n }, (_, i) => e(i))
          yield* log.record([
            ...many(3, () => entry(1)),
            ...many(5, (i) => entry(2, { result: i < 2 ? "valid" : "blacklisted", ipAddress: `203.0.113.${i}` })),
            ...many(4, () => entry(null, { result: "license_not_found" })),
            ...many(3, (i) => entry(3, { kind: "activate", result: "activated", fingerprint: `fp-${i}` })),
            entry(3, { kind: "activate", result: "already_active", fingerprint: "fp-x" }),
            entry(3, { kind: "activate", result: "activated", fingerprint: "fp-0", at: T0 - 2 * DAY })
          ])
          yield* repo.moveTopWindows(windowsAt(T0))
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [{ licenseId: 2, validations: 5 }, { licenseId: 1, validations: 3 }])
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 1), [{ licenseId: 2, validations: 5 }])
          yield* repo.moveTopWindows([{ period: "7d", from: H0 + HOUR }])
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [])
          assert.deepStrictEqual(yield* repo.topLicenses("30d", 1), [{ licenseId: 2, validations: 5 }])
          assert.deepStrictEqual(yield* repo.busyHours({ from: H0, counter: "validations", atLeast: 3 }), [
            { licenseId: 1, hour: H0, count: 3 },
            { licenseId: 2, hour: H0, count: 5 }
          ])
          assert.deepStrictEqual(yield* repo.busyHours({ from: H0, counter: "refused", atLeast: 3 }), [{ licenseId: 2, hour: H0, count: 3 }])
          assert.deepStrictEqual(yield* repo.busyHours({ from: H0 + HOUR, counter: "validations", atLeast: 1 }), [])
          const since = T0 - DAY
          assert.deepStrictEqual(yield* repo.distinctPerLicense({ since, column: "ip_address", atLeast: 5 }), [{ licenseId: 2, count: 5 }])
          assert.deepStrictEqual(yield* repo.distinctPerLicense({ since, column: "ip_address", atLeast: 1 }), [
            { licenseId: 1, count: 1 },
            { licenseId: 2, count: 5 },
            { licenseId: 3, count: 1 }
          ])
          assert.deepStrictEqual(
            yield* repo.distinctPerLicense({ since, column: "fingerprint", kind: "activate", result: "activated", atLeast: 3 }),
            [{ licenseId: 3, count: 3 }],
            "the entry of two days ago and the one of another result are not counted"
          )
          assert.deepStrictEqual(yield* repo.distinctPerLicense({ since, column: "fingerprint", kind: "activate", result: "activated", atLeast: 4 }), [])
        }))

      test("top licenses' totals follow their windows: writes inside and before a window, moves forward and back", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          const repo = yield* Ports.AnalyticsRepository
          const many = (n: number, licenseId: number | null, at: number) => Array.from({ length: n }, () => entry(licenseId, { at }))
          /** What each period's top should be: the hourly counters of the hours from its window's start on. */
          const check = (starts: Readonly<Record<Model.AnalyticsPeriod, number>>, label: string) =>
            Effect.forEach(Model.analyticsPeriods, (period) =>
              Effect.gen(function*() {
                const expected: Array<{ licenseId: number; validations: number }> = []
                for (const licenseId of [1, 2, 3, 4, 5]) {
                  const hours = yield* repo.hourly({ scope: "license", scopeId: licenseId, from: starts[period], to: T0 + 400 * DAY })
                  const c = Analytics.sumCounts(hours)
                  if (c.valid + c.invalid > 0) expected.push({ licenseId, validations: c.valid + c.invalid })
                }
                expected.sort((a, b) => b.validations - a.validations || a.licenseId - b.licenseId)
                assert.deepStrictEqual(yield* repo.topLicenses(period, 10), expected, `${label}, ${period}`)
              }))
          const startsAt = (now: number) =>
            Object.fromEntries(windowsAt(now).map((w) => [w.period, w.from])) as Record<Model.AnalyticsPeriod, number>
          yield* repo.moveTopWindows(windowsAt(T0))
          yield* log.record([
            ...many(3, 1, T0),
            ...many(2, 2, T0 - 3 * DAY),
            ...many(4, 3, T0 - 10 * DAY),
            ...many(1, 4, T0 - 40 * DAY),
            ...many(6, null, T0),
            entry(5, { kind: "activate", result: "activated" }),
            entry(1, { result: "license_expired", at: T0 - 100 * DAY })
          ])
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [{ licenseId: 1, validations: 3 }, { licenseId: 2, validations: 2 }])
          assert.deepStrictEqual(yield* repo.topLicenses("30d", 10), [
            { licenseId: 3, validations: 4 },
            { licenseId: 1, validations: 3 },
            { licenseId: 2, validations: 2 }
          ])
          assert.deepStrictEqual((yield* repo.topLicenses("90d", 10)).map((t) => t.licenseId), [3, 1, 2, 4], "the entry of 100 days ago is not in")
          yield* check(startsAt(T0), "after the writes")
          // Five days on, the 7-day window starts after license 2's validations.
          yield* repo.moveTopWindows(windowsAt(T0 + 5 * DAY))
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [{ licenseId: 1, validations: 3 }])
          yield* check(startsAt(T0 + 5 * DAY), "five days on")
          // An entry older than a window's start is not added to that window (it is to the longer ones).
          yield* log.record(many(2, 2, T0 - 3 * DAY))
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [{ licenseId: 1, validations: 3 }])
          assert.deepStrictEqual((yield* repo.topLicenses("30d", 10)).find((t) => t.licenseId === 2), { licenseId: 2, validations: 4 })
          yield* check(startsAt(T0 + 5 * DAY), "a late entry")
          // Moved again to the same place: nothing changes; moved back: the hours come back in.
          yield* repo.moveTopWindows(windowsAt(T0 + 5 * DAY))
          yield* check(startsAt(T0 + 5 * DAY), "the same move twice")
          yield* repo.moveTopWindows(windowsAt(T0))
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), [{ licenseId: 2, validations: 4 }, { licenseId: 1, validations: 3 }])
          yield* check(startsAt(T0), "moved back")
          yield* repo.moveTopWindows(windowsAt(T0 + 200 * DAY))
          for (const period of Model.analyticsPeriods) assert.deepStrictEqual(yield* repo.topLicenses(period, 10), [], period)
        }))

      test("top licenses' totals stay exact while writes and moves of the windows run at once", () =>
        Effect.gen(function*() {
          const log = yield* Ports.ActivityLog
          const repo = yield* Ports.AnalyticsRepository
          yield* repo.moveTopWindows(windowsAt(T0))
          // 24 batches, each of a few licenses at hours around the 7-day window's start, while it moves an hour on
          // at a time: whichever runs first, the totals end equal to the counters of the hours still inside.
          const start7 = Analytics.periodStart("7d", T0)
          const writes = Effect.forEach(Array.from({ length: 24 }, (_, i) => i), (i) =>
            log.record([
              entry(1 + (i % 3), { at: start7 + (i % 6) * HOUR }),
              entry(1 + ((i + 1) % 3), { at: start7 + ((i + 3) % 6) * HOUR }),
              entry(4, { at: T0 })
            ]), { concurrency: 4, discard: true })
          const moves = Effect.forEach(Array.from({ length: 4 }, (_, i) => i + 1), (i) =>
            repo.moveTopWindows(windowsAt(T0 + i * HOUR)), { concurrency: 2, discard: true })
          yield* Effect.all([writes, moves], { concurrency: "unbounded" })
          yield* repo.moveTopWindows(windowsAt(T0 + 4 * HOUR))
          const from = Analytics.periodStart("7d", T0 + 4 * HOUR)
          const expected: Array<{ licenseId: number; validations: number }> = []
          for (const licenseId of [1, 2, 3, 4]) {
            const c = Analytics.sumCounts(yield* repo.hourly({ scope: "license", scopeId: licenseId, from, to: T0 + DAY }))
            if (c.valid + c.invalid > 0) expected.push({ licenseId, validations: c.valid + c.invalid })
          }
          expected.sort((a, b) => b.validations - a.validations || a.licenseId - b.licenseId)
          assert.deepStrictEqual(yield* repo.topLicenses("7d", 10), expected)
          assert.strictEqual(expected.find((t) => t.licenseId === 4)?.validations, 24)
        }))

      test("seats and app versions count the machines holding a seat", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const repo = yield* Ports.AnalyticsRepository
          const limited = yield* licenses.insert(licenseDraft({ key: keyOf(1), maxActivations: 3 }))
          const unlimited = yield* licenses.insert(licenseDraft({ key: keyOf(2), maxActivations: null }))
          const suspended = yield* licenses.insert(licenseDraft({ key: keyOf(3), maxActivations: 10, state: "suspended" }))
          yield* machines.insert(machineDraft(limited.id, "a", { appVersion: "1.0" }))
          yield* machines.insert(machineDraft(limited.id, "b", { appVersion: "2.0", seatDeadline: T0 - 1 }))
          yield* machines.insert(machineDraft(limited.id, "c", { appVersion: "2.0", status: "inactive" }))
          yield* machines.insert(machineDraft(unlimited.id, "d", { appVersion: "2.0", seatDeadline: T0 + DAY }))
          yield* machines.insert(machineDraft(unlimited.id, "e", { appVersion: "2.0" }))
          yield* machines.insert(machineDraft(suspended.id, "f"))
          assert.deepStrictEqual(yield* repo.seats(["issued"], T0), { activeMachines: 1, totalSeats: 3 })
          assert.deepStrictEqual(yield* repo.seats(["issued", "suspended"], T0), { activeMachines: 2, totalSeats: 13 })
          assert.deepStrictEqual(yield* repo.seats(["revoked"], T0), { activeMachines: 0, totalSeats: 0 })
          assert.deepStrictEqual(yield* repo.appVersions(T0), [
            { appVersion: "2.0", machines: 2 },
            { appVersion: "1.0", machines: 1 },
            { appVersion: null, machines: 1 }
          ])
        }))

      test("an anomaly is recorded once per quiet window, and answered to the first caller only", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const repo = yield* Ports.AnalyticsRepository
          const a = { licenseId: 1, type: "ip_churn" as const, detectedAt: T0 }
          const b = { licenseId: 2, type: "validation_spike" as const, detectedAt: T0 }
          assert.deepStrictEqual([...yield* store.transaction(repo.recordAnomalies([a, b], T0 - DAY))].sort((x, y) => x.licenseId - y.licenseId), [a, b])
          assert.deepStrictEqual(yield* store.transaction(repo.recordAnomalies([{ ...a, detectedAt: T0 + 1 }], T0 + 1 - DAY)), [])
          const later = { ...a, detectedAt: T0 + 2 * DAY }
          const renewed = yield* store.transaction(repo.recordAnomalies([later, { ...a, type: "fingerprint_churn" }], T0 + DAY))
          assert.deepStrictEqual([...renewed].sort((x, y) => x.type.localeCompare(y.type)), [{ ...a, type: "fingerprint_churn" }, later])
          const since = (yield* repo.anomaliesSince(T0)).map((r) => `${r.licenseId}:${r.type}:${r.detectedAt - T0}`).sort()
          assert.deepStrictEqual(since, ["1:fingerprint_churn:0", `1:ip_churn:${2 * DAY}`, "2:validation_spike:0"])
          const exit = yield* Effect.exit(store.transaction(Effect.andThen(repo.recordAnomalies([{ ...b, licenseId: 9 }], T0), Effect.fail(new Boom()))))
          assert.isTrue(Exit.isFailure(exit))
          assert.isFalse((yield* repo.anomaliesSince(0)).some((r) => r.licenseId === 9), "rolled back with its transaction")
        }))
    })

    describe("transactions", () => {
      /** Writes through several ports; returns the license written. */
      const writeEverything = Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const machines = yield* Ports.MachineRepository
        const outbox = yield* Ports.EventOutbox
        const log = yield* Ports.ActivityLog
        const existing = (yield* licenses.findByKey(keyOf(1)))!
        yield* licenses.update({ ...existing, userId: 999, revision: existing.revision + 1 })
        const created = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        yield* machines.insert(machineDraft(existing.id, "fp-new"))
        yield* outbox.append([event("license.revoked", 1, existing.id)])
        yield* log.record([activity(existing.id)])
        return created
      })

      /** Checks that nothing `writeEverything` did is visible. */
      const assertUntouched = (original: Model.License, seq: number) =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const outbox = yield* Ports.EventOutbox
          const log = yield* Ports.ActivityLog
          assert.deepStrictEqual(yield* licenses.findByKey(keyOf(1)), original)
          assert.isUndefined(yield* licenses.findByKey(keyOf(2)))
          assert.isUndefined(yield* machines.findByFingerprint(original.id, "fp-new"))
          assert.deepStrictEqual(yield* outbox.readAfter(0, 10), [])
          assert.strictEqual(yield* outbox.revocationSeq, seq)
          assert.strictEqual(yield* log.count({}), 0)
          // The key can be taken again: the rolled-back insert left nothing behind.
          yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
        })

      const setup = Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const outbox = yield* Ports.EventOutbox
        const original = yield* licenses.insert(licenseDraft({ key: keyOf(1), userId: 1 }))
        return { original, seq: yield* outbox.revocationSeq }
      })

      test("a successful transaction commits every write", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const outbox = yield* Ports.EventOutbox
          const log = yield* Ports.ActivityLog
          const { original, seq } = yield* setup
          yield* store.transaction(writeEverything)
          assert.strictEqual((yield* licenses.findByKey(keyOf(1)))?.userId, 999)
          assert.isDefined(yield* licenses.findByKey(keyOf(2)))
          assert.isDefined(yield* (yield* Ports.MachineRepository).findByFingerprint(original.id, "fp-new"))
          assert.strictEqual((yield* outbox.readAfter(0, 10)).length, 1)
          assert.isTrue((yield* outbox.revocationSeq) > seq)
          assert.strictEqual(yield* log.count({}), 1)
        }))

      test("a typed failure rolls back every write", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const { original, seq } = yield* setup
          const error = yield* failureOf(store.transaction(Effect.andThen(writeEverything, Effect.fail(new Boom()))))
          assert.instanceOf(error, Boom)
          yield* assertUntouched(original, seq)
        }))

      test("a defect rolls back every write", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const { original, seq } = yield* setup
          const exit = yield* Effect.exit(store.transaction(Effect.andThen(writeEverything, Effect.die("kaput"))))
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
          yield* assertUntouched(original, seq)
        }))

      test("a failed insert (LicenseExists) inside a transaction rolls back the writes before it", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const { original, seq } = yield* setup
          const error = yield* failureOf(store.transaction(Effect.andThen(writeEverything, licenses.insert(licenseDraft({ key: keyOf(1) })))))
          assert.strictEqual(error._tag, "LicenseExists")
          yield* assertUntouched(original, seq)
        }))

      test("an interrupted transaction rolls back every write", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const { original, seq } = yield* setup
          const wrote = yield* Deferred.make<void>()
          const fiber = yield* Effect.forkChild(
            store.transaction(Effect.andThen(writeEverything, Effect.andThen(Deferred.succeed(wrote, undefined), Effect.never)))
          )
          yield* Deferred.await(wrote)
          yield* Fiber.interrupt(fiber)
          yield* assertUntouched(original, seq)
        }))

      test("a nested transaction joins the outer one: it commits with it and rolls back with it", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const { original, seq } = yield* setup
          yield* store.transaction(Effect.andThen(store.transaction(writeEverything), licenses.insert(licenseDraft({ key: keyOf(3) }))))
          assert.isDefined(yield* licenses.findByKey(keyOf(2)))
          assert.isDefined(yield* licenses.findByKey(keyOf(3)))

          const inner = store.transaction(
            Effect.gen(function*() {
              const license = (yield* licenses.findByKey(keyOf(1)))!
              yield* licenses.update({ ...license, userId: 5, revision: license.revision + 1 })
              yield* licenses.insert(licenseDraft({ key: keyOf(4) }))
            })
          )
          const error = yield* failureOf(store.transaction(Effect.andThen(inner, Effect.fail(new Boom()))))
          assert.instanceOf(error, Boom)
          assert.strictEqual((yield* licenses.findByKey(keyOf(1)))?.userId, 999)
          assert.isUndefined(yield* licenses.findByKey(keyOf(4)))
          assert.isTrue((yield* (yield* Ports.EventOutbox).revocationSeq) > seq)
          assert.strictEqual(original.userId, 1)
        }))

      test("a failed nested transaction undoes its own writes; the outer one goes on and commits", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          yield* setup
          const outcome = yield* store.transaction(
            Effect.gen(function*() {
              yield* licenses.insert(licenseDraft({ key: keyOf(5) }))
              const inner = yield* Effect.flip(
                store.transaction(Effect.andThen(licenses.insert(licenseDraft({ key: keyOf(6) })), Effect.fail(new Boom())))
              )
              assert.isUndefined(yield* licenses.findByKey(keyOf(6)))
              yield* licenses.insert(licenseDraft({ key: keyOf(7) }))
              return inner
            })
          )
          assert.instanceOf(outcome, Boom)
          assert.isDefined(yield* licenses.findByKey(keyOf(5)))
          assert.isUndefined(yield* licenses.findByKey(keyOf(6)))
          assert.isDefined(yield* licenses.findByKey(keyOf(7)))
        }))

      test("a transaction reads its own writes", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          yield* store.transaction(
            Effect.gen(function*() {
              const license = yield* licenses.insert(licenseDraft({ key: keyOf(8), productId: 42 }))
              assert.deepStrictEqual(yield* licenses.findByKey(keyOf(8)), license)
              const machine = yield* machines.insert(machineDraft(license.id, "own"))
              assert.deepStrictEqual(yield* machines.listActive(license.id), [machine])
              const page = yield* licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc", productId: 42 })
              assert.deepStrictEqual(page, { items: [license], total: 1 })
              yield* licenses.delete(license.id)
              assert.isUndefined(yield* licenses.findByKey(keyOf(8)))
              assert.isUndefined(yield* machines.findById(machine.id))
            })
          )
        }))
    })

    describe("locks and concurrency", () => {
      test("lockByKey and lockById load the license (also outside a transaction) or nothing", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const license = yield* licenses.insert(licenseDraft())
          assert.deepStrictEqual(yield* store.transaction(licenses.lockByKey(license.key)), license)
          assert.deepStrictEqual(yield* store.transaction(licenses.lockById(license.id)), license)
          assert.isUndefined(yield* store.transaction(licenses.lockByKey(keyOf(404))))
          assert.isUndefined(yield* store.transaction(licenses.lockById(license.id + 1000)))
          assert.deepStrictEqual(yield* licenses.lockByKey(license.key), license)
        }))

      test("lockByKey serialises 200 concurrent read-modify-write transactions", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const license = yield* licenses.insert(licenseDraft({ maxActivations: 0 }))
          const increment = (byId: boolean) =>
            store.transaction(
              Effect.gen(function*() {
                const current = byId ? yield* licenses.lockById(license.id) : yield* licenses.lockByKey(license.key)
                if (current === undefined) return yield* Effect.die("license vanished")
                // Let the other fibers run between the read and the write.
                yield* Effect.yieldNow
                yield* licenses.update({ ...current, maxActivations: current.maxActivations! + 1, revision: current.revision + 1 })
              })
            )
          yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => increment(i % 2 === 0), { concurrency: "unbounded" })
          const final = yield* licenses.findById(license.id)
          assert.strictEqual(final?.maxActivations, 200)
          assert.strictEqual(final?.revision, license.revision + 200)
        }))

      test("lockByKeys locks every license named, in id order, and leaves unknown keys out", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const made = yield* Effect.forEach([3, 1, 2], (n) => licenses.insert(licenseDraft({ key: keyOf(n), maxActivations: 0 })))
          const byId = [...made].sort((x, y) => x.id - y.id)
          assert.deepStrictEqual(yield* store.transaction(licenses.lockByKeys([])), [])
          const locked = yield* store.transaction(licenses.lockByKeys([keyOf(2), keyOf(9), keyOf(3), keyOf(1), keyOf(2)]))
          assert.deepStrictEqual(locked, byId)
          // Increments through lockByKeys (several licenses, in any order of keys) and lockByKey never lose one.
          const increment = (i: number) =>
            store.transaction(
              Effect.gen(function*() {
                const keys = i % 3 === 0 ? [keyOf(1)] : i % 3 === 1 ? [keyOf(3), keyOf(1), keyOf(2)] : [keyOf(2), keyOf(3)]
                const current = i % 5 === 0 ? [(yield* licenses.lockByKey(keys[0]!))!] : yield* licenses.lockByKeys(keys)
                assert.strictEqual(current.length, i % 5 === 0 ? 1 : keys.length)
                yield* Effect.yieldNow
                for (const license of current) {
                  yield* licenses.update({ ...license, maxActivations: license.maxActivations! + 1, revision: license.revision + 1 })
                }
              })
            )
          const rounds = Array.from({ length: 60 }, (_, i) => i)
          yield* Effect.forEach(rounds, increment, { concurrency: "unbounded" })
          const expected = new Map<string, number>()
          for (const i of rounds) {
            const keys = i % 3 === 0 ? [keyOf(1)] : i % 3 === 1 ? [keyOf(3), keyOf(1), keyOf(2)] : [keyOf(2), keyOf(3)]
            for (const key of i % 5 === 0 ? [keys[0]!] : keys) expected.set(key, (expected.get(key) ?? 0) + 1)
          }
          for (const [key, n] of expected) assert.strictEqual((yield* licenses.findByKey(key))?.maxActivations, n, key)
        }))

      test("200 concurrent activations of distinct fingerprints on a 5-seat license: 5 seats, 195 refusals", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const outbox = yield* Ports.EventOutbox
          const licensing = yield* Licensing
          const license = yield* licenses.insert(licenseDraft({ maxActivations: 5, overageStrategy: "deny" }))
          const before = transactions.count
          const exits = yield* Effect.forEach(
            Array.from({ length: 200 }, (_, i) => i),
            (i) => Effect.exit(licensing.activate({ licenseKey: license.key, facts: { fingerprint: `fp-${i}` }, ipAddress: null })),
            { concurrency: "unbounded" }
          )
          const created = exits.filter((e) => Exit.isSuccess(e) && e.value.created)
          const refused = exits.filter((e) => Exit.isFailure(e) && (Cause.squash(e.cause) as { readonly _tag?: string })._tag === "MachineLimitExceeded")
          assert.strictEqual(created.length, 5)
          assert.strictEqual(refused.length, 195)
          assert.strictEqual((yield* machines.listActive(license.id)).length, 5)
          assert.strictEqual((yield* machines.list(license.id, { page: 1, perPage: 100 })).total, 5)
          assert.strictEqual((yield* outbox.readAfter(0, 1000)).filter((e) => e.type === "machine.activated").length, 5)
          assert.strictEqual((yield* licenses.findById(license.id))?.activatedAt, T0)
          // The activations were grouped: far fewer transactions than calls (batches of more than one).
          const used = transactions.count - before
          assert.isAtLeast(used, 1)
          assert.isBelow(used, 100, `${used} transactions for 200 activations`)
        }).pipe(
          Effect.provide(Licensing.layer.pipe(Layer.provide(ActivityRecorder.layerDiscard))),
          Effect.updateService(Ports.Store, (store) => counting(yielding(store))),
          Effect.updateService(Ports.LicenseRepository, yielding),
          Effect.updateService(Ports.MachineRepository, yielding)
        ))

      test("20 concurrent pool draws in 20 transactions get 20 distinct keys", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const generators = yield* Ports.GeneratorRepository
          const generator = yield* generators.insert(generatorDraft())
          yield* licenses.insertMany(
            Array.from({ length: 30 }, (_, i) => licenseDraft({ key: keyOf(i), state: "pending", source: "generator", generatorId: generator.id }))
          )
          const draw = store.transaction(
            Effect.gen(function*() {
              const claimed = yield* licenses.claimFromPool(generator.id)
              if (claimed === undefined) return yield* Effect.die("the pool ran dry")
              yield* Effect.yieldNow
              const issued = yield* licenses.update({ ...claimed, state: "issued", source: "pool", revision: claimed.revision + 1 })
              return issued.key
            })
          )
          const keys = yield* Effect.all(Array.from({ length: 20 }, () => draw), { concurrency: "unbounded" })
          assert.strictEqual(new Set(keys).size, 20)
          assert.strictEqual(yield* licenses.poolSize(generator.id), 10)
          const issued = yield* licenses.list({ page: 1, perPage: 100, orderBy: "id", order: "asc", states: ["issued"] })
          assert.deepStrictEqual(issued.items.map((l) => l.key).sort(), [...keys].sort())
        }))

      test("claimExpired never hands the same machine to two concurrent transactions", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const machines = yield* Ports.MachineRepository
          const license = yield* licenses.insert(licenseDraft())
          yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) =>
            machines.insert(machineDraft(license.id, `due-${i}`, { seatDeadline: T0 - i })))
          const seen = yield* Ref.make<ReadonlyArray<number>>([])
          const sweep = store.transaction(
            Effect.gen(function*() {
              const claimed = yield* machines.claimExpired(T0, 10)
              yield* Effect.yieldNow
              for (const machine of claimed) {
                yield* machines.update({ ...machine, status: "inactive", deactivatedAt: T0, deactivationReason: "heartbeat_dead", seatDeadline: null })
              }
              yield* Ref.update(seen, (ids) => [...ids, ...claimed.map((m) => m.id)])
            })
          )
          yield* Effect.all(Array.from({ length: 10 }, () => sweep), { concurrency: "unbounded" })
          const ids = yield* Ref.get(seen)
          assert.strictEqual(new Set(ids).size, ids.length, "a machine was claimed twice")
          assert.strictEqual(ids.length, 50)
          assert.deepStrictEqual(yield* store.transaction(machines.claimExpired(T0, 10)), [])
          assert.deepStrictEqual(yield* machines.listActive(license.id), [])
        }))
    })

    describe("subscriptions and their renewal records", () => {
      test("insert, find and update round-trip every field, with values and with nulls; amounts up to 2^53 − 1", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          const full = subscriptionDraft(license.id)
          const inserted = yield* subscriptions.insert(full, T0 + DAY)
          assert.isTrue(isPositiveInt(inserted.id))
          assert.deepStrictEqual(inserted, { ...full, id: inserted.id, revision: 1 })
          assert.deepStrictEqual(yield* subscriptions.findById(inserted.id), inserted)
          const bare = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
          assert.deepStrictEqual(bare, { ...bareSubscriptionDraft(license.id), id: bare.id, revision: 1 })
          assert.isUndefined(yield* subscriptions.findById(999_999))

          const changed: Model.Subscription = {
            ...bareSubscriptionDraft(license.id, { status: "on-hold", billingPeriod: "year", billingInterval: 3, amount: 1, currency: "JPY", updatedAt: T0 + 9 }),
            id: inserted.id,
            revision: 2
          }
          assert.deepStrictEqual(yield* subscriptions.update(changed, null), changed)
          assert.deepStrictEqual(yield* subscriptions.findById(inserted.id), changed)
        }))

      test("list filters by status, user and product, oldest first, with paging and the total", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          const made = yield* Effect.forEach(Array.from({ length: 5 }, (_, i) => i), (i) =>
            subscriptions.insert(subscriptionDraft(license.id, { status: i % 2 === 0 ? "active" : "trial", userId: i < 3 ? 1 : 2, productId: i === 4 ? null : 3 }), null))
          const ids = (page: Ports.Page<Model.Subscription>) => page.items.map((s) => s.id)
          const all = yield* subscriptions.list({ page: 1, perPage: 2 })
          assert.deepStrictEqual([ids(all), all.total], [[made[0]!.id, made[1]!.id], 5])
          const active = yield* subscriptions.list({ page: 1, perPage: 10, status: "active" })
          assert.deepStrictEqual(ids(active), [made[0]!.id, made[2]!.id, made[4]!.id])
          const user2 = yield* subscriptions.list({ page: 1, perPage: 10, userId: 2, productId: 3 })
          assert.deepStrictEqual([ids(user2), user2.total], [[made[3]!.id], 1])
          assert.deepStrictEqual((yield* subscriptions.list({ page: 3, perPage: 2 })).items.map((s) => s.id), [made[4]!.id])
        }))

      test("totals count subscriptions and sum their prices per status, currency, period and interval, past 2^53 exactly", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          assert.deepStrictEqual(yield* subscriptions.totals, [])
          const max = Number.MAX_SAFE_INTEGER
          const plans: Array<Partial<Model.SubscriptionDraft>> = [
            { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: max },
            { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: max },
            { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 3, amount: 5 },
            { status: "active", currency: "JPY", billingPeriod: "year", billingInterval: 1, amount: 1000 },
            { status: "trial", currency: "USD", billingPeriod: "month", billingInterval: 1, amount: 7 }
          ]
          yield* Effect.forEach(plans, (plan) => subscriptions.insert(subscriptionDraft(license.id, plan), null))
          const key = (t: Ports.SubscriptionTotal) => `${t.status} ${t.currency} ${t.billingPeriod} ${t.billingInterval}`
          const totals = [...yield* subscriptions.totals].sort((a, b) => key(a).localeCompare(key(b)))
          assert.deepStrictEqual(totals, [
            { status: "active", currency: "JPY", billingPeriod: "year", billingInterval: 1, count: 1, amount: 1000n },
            { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 1, count: 2, amount: 2n * BigInt(max) },
            { status: "active", currency: "USD", billingPeriod: "month", billingInterval: 3, count: 1, amount: 5n },
            { status: "trial", currency: "USD", billingPeriod: "month", billingInterval: 1, count: 1, amount: 7n }
          ])
        }))

      test("claimDue claims subscriptions due at or before now, earliest first, up to the limit; a cleared due time is never claimed", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          const late = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 - MINUTE)
          const early = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 - DAY)
          const future = yield* subscriptions.insert(bareSubscriptionDraft(license.id), T0 + 1)
          yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
          const claimed = yield* store.transaction(subscriptions.claimDue(T0, 10))
          assert.deepStrictEqual(claimed.map((s) => s.id), [early.id, late.id])
          assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0, 1))).map((s) => s.id), [early.id])
          yield* subscriptions.update({ ...early, revision: 2 }, null)
          assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0 + 1, 10))).map((s) => s.id), [late.id, future.id])
        }))

      test("claimDue never hands the same subscription to two concurrent transactions (no move made twice)", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) => subscriptions.insert(bareSubscriptionDraft(license.id), T0 - i))
          const seen = yield* Ref.make<ReadonlyArray<number>>([])
          const job = store.transaction(
            Effect.gen(function*() {
              const claimed = yield* subscriptions.claimDue(T0, 5)
              yield* Effect.yieldNow
              for (const s of claimed) yield* subscriptions.update({ ...s, status: "on-hold", revision: s.revision + 1 }, null)
              yield* Ref.update(seen, (ids) => [...ids, ...claimed.map((s) => s.id)])
            })
          )
          yield* Effect.all(Array.from({ length: 8 }, () => job), { concurrency: "unbounded" })
          const ids = yield* Ref.get(seen)
          assert.strictEqual(new Set(ids).size, ids.length, "a subscription was claimed twice")
          assert.strictEqual(ids.length, 30)
          assert.deepStrictEqual(yield* store.transaction(subscriptions.claimDue(T0, 10)), [])
        }))

      test("a subscription written inside a failed transaction is rolled back", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          const kept = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
          yield* store.transaction(Effect.gen(function*() {
            yield* subscriptions.update({ ...kept, status: "cancelled", revision: 2 }, null)
            yield* subscriptions.insertRenewal(kept.id, { type: "renewal", amount: 1, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + DAY, proration: null, from: null, to: null, transactionId: null, createdAt: T0 })
            return yield* Effect.fail(new Boom())
          })).pipe(Effect.exit)
          assert.deepStrictEqual(yield* subscriptions.findById(kept.id), kept)
          assert.strictEqual((yield* subscriptions.listRenewals(kept.id, { page: 1, perPage: 10 })).total, 0)
        }))

      test("deleting a license deletes its subscriptions and their renewal records", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const gone = yield* licenses.insert(licenseDraft())
          const kept = yield* licenses.insert(licenseDraft({ key: keyOf(2) }))
          const a = yield* subscriptions.insert(bareSubscriptionDraft(gone.id), T0)
          const b = yield* subscriptions.insert(bareSubscriptionDraft(kept.id), T0)
          yield* subscriptions.insertRenewal(a.id, { type: "signup", amount: 1, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + DAY, proration: null, from: null, to: null, transactionId: null, createdAt: T0 })
          yield* licenses.delete(gone.id)
          assert.isUndefined(yield* subscriptions.findById(a.id))
          assert.strictEqual((yield* subscriptions.listRenewals(a.id, { page: 1, perPage: 10 })).total, 0)
          assert.deepStrictEqual(yield* subscriptions.findById(b.id), b)
          const store = yield* Ports.Store
          assert.deepStrictEqual((yield* store.transaction(subscriptions.claimDue(T0, 10))).map((s) => s.id), [b.id])
        }))

      test("renewal records round-trip every field, listed oldest first per subscription", () =>
        Effect.gen(function*() {
          const licenses = yield* Ports.LicenseRepository
          const subscriptions = yield* Ports.SubscriptionRepository
          const license = yield* licenses.insert(licenseDraft())
          const a = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
          const b = yield* subscriptions.insert(bareSubscriptionDraft(license.id), null)
          const plan = { amount: 3000, billingPeriod: "month" as const, billingInterval: 1, productId: null }
          const signup: Model.RenewalDraft = { type: "signup", amount: 3000, currency: "USD", status: "paid", periodStart: T0, periodEnd: T0 + 31 * DAY, proration: null, from: null, to: plan, transactionId: null, createdAt: T0 }
          const switched: Model.RenewalDraft = {
            type: "switch",
            amount: -1000,
            currency: "USD",
            status: "paid",
            periodStart: T0,
            periodEnd: T0 + 31 * DAY,
            proration: { credit: 2000, charge: 1000, net: -1000 },
            from: plan,
            to: { amount: 1500, billingPeriod: "year", billingInterval: 2, productId: 4 },
            transactionId: "tx-9",
            createdAt: T0 + DAY
          }
          const first = yield* subscriptions.insertRenewal(a.id, signup)
          yield* subscriptions.insertRenewal(b.id, signup)
          const second = yield* subscriptions.insertRenewal(a.id, switched)
          assert.deepStrictEqual(first, { ...signup, id: first.id, subscriptionId: a.id })
          assert.deepStrictEqual(second, { ...switched, id: second.id, subscriptionId: a.id })
          const listed = yield* subscriptions.listRenewals(a.id, { page: 1, perPage: 10 })
          assert.deepStrictEqual(listed, { items: [first, second], total: 2 })
          assert.deepStrictEqual((yield* subscriptions.listRenewals(a.id, { page: 2, perPage: 1 })).items, [second])
        }))
    })

    describe("webhooks and their deliveries", () => {
      const webhookDraft = (overrides: Partial<Model.WebhookDraft> = {}): Model.WebhookDraft => ({
        name: "hook",
        url: "https://hooks.example.com/lm",
        events: ["license.created", "machine.activated"],
        status: "active",
        sealedSecret: "lm-sealed:v1:00000000:c2VhbGVk",
        failingSince: null,
        createdAt: T0,
        updatedAt: T0,
        ...overrides
      })
      const deliveryDraft = (webhookId: number, eventId: number, overrides: Partial<Model.WebhookDeliveryDraft> = {}): Model.WebhookDeliveryDraft => ({
        webhookId,
        eventId,
        type: "license.created",
        status: "pending",
        attempts: 0,
        responseStatus: null,
        responseExcerpt: null,
        lastAttemptAt: null,
        nextAttemptAt: T0,
        lockedUntil: null,
        createdAt: T0,
        ...overrides
      })

      test("webhooks round-trip every field; list, listActive, update and delete (with their deliveries)", () =>
        Effect.gen(function*() {
          const repo = yield* Ports.WebhookRepository
          const queue = yield* Ports.WebhookDeliveryQueue
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const a = yield* repo.insert(webhookDraft({ events: ["*"], failingSince: T0 - DAY }))
          const b = yield* repo.insert(webhookDraft({ name: "second", status: "disabled" }))
          assert.isTrue(isPositiveInt(a.id) && b.id > a.id)
          assert.deepStrictEqual(a, { ...webhookDraft({ events: ["*"], failingSince: T0 - DAY }), id: a.id })
          assert.deepStrictEqual(yield* repo.findById(b.id), b)
          assert.isUndefined(yield* repo.findById(b.id + 100))
          const page = yield* repo.list({ page: 1, perPage: 1 })
          assert.deepStrictEqual([page.items.map((w) => w.id), page.total], [[a.id], 2])
          assert.deepStrictEqual((yield* repo.listActive).map((w) => w.id), [a.id])
          const enabled = yield* repo.update({ ...b, status: "active", url: "https://other.example.com/" })
          assert.deepStrictEqual(yield* repo.findById(b.id), enabled)
          assert.deepStrictEqual((yield* repo.listActive).map((w) => w.id), [a.id, b.id])

          yield* outbox.append([event("license.created", 1)])
          yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* queue.dispatch(events.map((e) => e.id), [deliveryDraft(a.id, events[0]!.id), deliveryDraft(b.id, events[0]!.id)])
          }))
          assert.strictEqual((yield* queue.list(a.id, { page: 1, perPage: 10 })).total, 1)
          assert.isTrue(yield* repo.delete(a.id))
          assert.isFalse(yield* repo.delete(a.id))
          assert.isUndefined(yield* repo.findById(a.id))
          assert.strictEqual((yield* queue.list(a.id, { page: 1, perPage: 10 })).total, 0)
          assert.strictEqual((yield* queue.list(b.id, { page: 1, perPage: 10 })).total, 1)
        }))

      test("lockById loads a webhook (or nothing) and serialises concurrent read-modify-write transactions", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const repo = yield* Ports.WebhookRepository
          const webhook = yield* repo.insert(webhookDraft({ failingSince: 0 }))
          assert.deepStrictEqual(yield* store.transaction(repo.lockById(webhook.id)), webhook)
          assert.isUndefined(yield* store.transaction(repo.lockById(webhook.id + 1000)))
          // Each transaction adds 1 to failingSince after reading it under the lock: none is lost.
          const increment = store.transaction(
            Effect.gen(function*() {
              const current = yield* repo.lockById(webhook.id)
              if (current === undefined) return yield* Effect.die("webhook vanished")
              // Let the other fibers run between the read and the write.
              yield* Effect.yieldNow
              yield* repo.update({ ...current, failingSince: current.failingSince! + 1 })
            })
          )
          yield* Effect.forEach(Array.from({ length: 50 }), () => increment, { concurrency: "unbounded" })
          assert.strictEqual((yield* repo.findById(webhook.id))?.failingSince, 50)
        }))

      test("each committed event is claimed for dispatch until a dispatch commits; a rollback gives it back", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const queue = yield* Ports.WebhookDeliveryQueue
          yield* outbox.append([event("license.created", 1, 5), event("machine.activated", 2)])
          const types = (events: ReadonlyArray<Model.StoredEvent>) => events.map((e) => e.type)
          const rolledBack = yield* Effect.exit(store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* queue.dispatch(events.map((e) => e.id), [])
            return yield* Effect.fail(new Boom())
          })))
          assert.isTrue(Exit.isFailure(rolledBack))
          const claimed = yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* queue.dispatch(events.map((e) => e.id), [])
            return events
          }))
          assert.deepStrictEqual(types(claimed), ["license.created", "machine.activated"])
          const first = claimed[0]!
          assert.deepStrictEqual(yield* outbox.findById(first.id), first)
          assert.deepStrictEqual({ ...first, id: 0 }, { ...event("license.created", 1, 5), id: 0 })
          assert.deepStrictEqual(yield* store.transaction(queue.claimUndispatched(10)), [])
          yield* outbox.append([event("license.updated", 3)])
          assert.deepStrictEqual(types(yield* store.transaction(queue.claimUndispatched(10))), ["license.updated"])
        }))

      test("concurrent dispatchers never claim one event twice and together claim them all", () =>
        Effect.gen(function*() {
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const queue = yield* Ports.WebhookDeliveryQueue
          yield* outbox.append(Array.from({ length: 50 }, (_, i) => event("license.updated", i + 1)))
          const seen = yield* Ref.make<ReadonlyArray<number>>([])
          const dispatcher = store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* Effect.yieldNow
            yield* queue.dispatch(events.map((e) => e.id), [])
            yield* Ref.update(seen, (ids) => [...ids, ...events.map((e) => e.id)])
          }))
          yield* Effect.all(Array.from({ length: 10 }, () => dispatcher), { concurrency: "unbounded" })
          const ids = yield* Ref.get(seen)
          assert.strictEqual(new Set(ids).size, ids.length, "an event was claimed twice")
          assert.strictEqual(ids.length, 50)
        }))

      test("due deliveries of active webhooks are claimed for a lease, once; the lease lapses; list newest first", () =>
        Effect.gen(function*() {
          const repo = yield* Ports.WebhookRepository
          const queue = yield* Ports.WebhookDeliveryQueue
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const on = yield* repo.insert(webhookDraft())
          const off = yield* repo.insert(webhookDraft({ status: "disabled" }))
          yield* outbox.append([event("license.created", 1), event("license.created", 2), event("license.created", 3)])
          const [e1, e2, e3]: ReadonlyArray<number> = yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            const [x, y, z] = events.map((e) => e.id)
            yield* queue.dispatch(events.map((e) => e.id), [
              deliveryDraft(on.id, x!),
              deliveryDraft(on.id, y!, { nextAttemptAt: T0 + MINUTE }),
              deliveryDraft(on.id, z!, { status: "delivered", nextAttemptAt: null }),
              deliveryDraft(off.id, x!)
            ])
            return [x!, y!, z!] as const
          }))
          const listed = yield* queue.list(on.id, { page: 1, perPage: 10 })
          assert.deepStrictEqual(listed.items.map((d) => d.eventId), [e3, e2, e1])
          const claimed = yield* queue.claimDue(T0, T0 + MINUTE, 10)
          assert.deepStrictEqual(claimed.map((d) => [d.webhookId, d.eventId, d.lockedUntil]), [[on.id, e1, T0 + MINUTE]])
          assert.deepStrictEqual(yield* queue.claimDue(T0 + 1, T0 + MINUTE, 10), [])
          // At T0 + MINUTE the lease of the first lapsed and the second fell due.
          const later = yield* queue.claimDue(T0 + MINUTE, T0 + 2 * MINUTE, 10)
          assert.deepStrictEqual(later.map((d) => d.eventId), [e1, e2])
          const done = yield* queue.update({ ...later[0]!, status: "delivered", attempts: 1, responseStatus: 204, responseExcerpt: "", lastAttemptAt: T0 + MINUTE, nextAttemptAt: null, lockedUntil: null })
          assert.deepStrictEqual(yield* queue.findById(on.id, done.id), done)
          assert.isUndefined(yield* queue.findById(off.id, done.id))
          assert.deepStrictEqual(yield* queue.claimDue(T0 + 10 * MINUTE, T0 + 11 * MINUTE, 10).pipe(Effect.map((ds) => ds.map((d) => d.eventId))), [e2])
          assert.deepStrictEqual(yield* outbox.readAfter(0, 10).pipe(Effect.map((es) => es.length)), 3)
        }))

      test("recording an attempt of a delivery deleted with its webhook meanwhile writes nothing and does not fail", () =>
        Effect.gen(function*() {
          const repo = yield* Ports.WebhookRepository
          const queue = yield* Ports.WebhookDeliveryQueue
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const hook = yield* repo.insert(webhookDraft())
          yield* outbox.append([event("license.created", 1)])
          yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* queue.dispatch(events.map((e) => e.id), [deliveryDraft(hook.id, events[0]!.id)])
          }))
          const [claimed] = yield* queue.claimDue(T0, T0 + MINUTE, 10)
          assert.isTrue(yield* repo.delete(hook.id))
          yield* queue.update({ ...claimed!, status: "delivered", attempts: 1, lockedUntil: null })
          assert.isUndefined(yield* queue.findById(hook.id, claimed!.id))
          assert.strictEqual((yield* queue.list(hook.id, { page: 1, perPage: 10 })).total, 0)
        }))

      test("a claimed batch's events are read in one call and its attempts recorded in one; a deleted delivery stays deleted", () =>
        Effect.gen(function*() {
          const repo = yield* Ports.WebhookRepository
          const queue = yield* Ports.WebhookDeliveryQueue
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const kept = yield* repo.insert(webhookDraft())
          const gone = yield* repo.insert(webhookDraft())
          yield* outbox.append([event("license.created", 1), event("machine.activated", 2)])
          yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(10)
            yield* queue.dispatch(
              events.map((e) => e.id),
              events.flatMap((e) => [deliveryDraft(kept.id, e.id, { type: e.type }), deliveryDraft(gone.id, e.id, { type: e.type })])
            )
          }))
          const claimed = yield* queue.claimDue(T0, T0 + MINUTE, 10)
          assert.strictEqual(claimed.length, 4)
          const events = yield* outbox.findByIds([...new Set(claimed.map((d) => d.eventId)), 999_999])
          assert.deepStrictEqual(events.map((e) => e.type).sort(), ["license.created", "machine.activated"])
          assert.deepStrictEqual(yield* outbox.findByIds([]), [])
          assert.isTrue(yield* repo.delete(gone.id))
          const [first, second] = claimed.filter((d) => d.webhookId === kept.id)
          const delivered = { ...first!, status: "delivered", attempts: 1, responseStatus: 204, responseExcerpt: "ok", lastAttemptAt: T0 + 5, nextAttemptAt: null, lockedUntil: null } as const
          const retried = { ...second!, attempts: 1, responseStatus: 500, responseExcerpt: "no", lastAttemptAt: T0 + 5, nextAttemptAt: T0 + 30_000, lockedUntil: null }
          yield* queue.recordAttempts([...claimed.filter((d) => d.webhookId === gone.id), delivered, retried])
          yield* queue.recordAttempts([])
          assert.deepStrictEqual(yield* queue.findById(kept.id, first!.id), delivered)
          assert.deepStrictEqual(yield* queue.findById(kept.id, second!.id), retried)
          assert.strictEqual((yield* queue.list(gone.id, { page: 1, perPage: 10 })).total, 0)
          // The retried one is due again at its next attempt, not before.
          assert.deepStrictEqual(yield* queue.claimDue(T0 + 29_999, T0 + MINUTE, 10), [])
          assert.deepStrictEqual((yield* queue.claimDue(T0 + 30_000, T0 + MINUTE, 10)).map((d) => d.id), [second!.id])
        }))

      test("concurrent workers never hold one delivery at once", () =>
        Effect.gen(function*() {
          const repo = yield* Ports.WebhookRepository
          const queue = yield* Ports.WebhookDeliveryQueue
          const store = yield* Ports.Store
          const outbox = yield* Ports.EventOutbox
          const hook = yield* repo.insert(webhookDraft())
          yield* outbox.append(Array.from({ length: 40 }, (_, i) => event("license.created", i + 1)))
          yield* store.transaction(Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(100)
            yield* queue.dispatch(events.map((e) => e.id), events.map((e) => deliveryDraft(hook.id, e.id)))
          }))
          const claims = yield* Effect.all(Array.from({ length: 8 }, () => queue.claimDue(T0, T0 + MINUTE, 10)), { concurrency: "unbounded" })
          const ids = claims.flat().map((d) => d.id)
          assert.strictEqual(new Set(ids).size, ids.length, "a delivery was claimed twice")
          assert.strictEqual(ids.length, 40)
        }))
    })
  })
}
