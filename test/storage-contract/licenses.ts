/** The storage contract of LicenseRepository: licenses, generator pools, lists and counts, row locks. */
import { assert, describe } from "@effect/vitest"
import { ActivityRecorder, Licensing, Model, Ports } from "@lm/domain"
import { Cause, Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { freshTokens } from "../../packages/domain/test/fixtures.js"
import { DAY, fullLicenseDraft, generatorDraft, keyOf, licenseDraft, machineDraft, T0 } from "./fixtures.js"
import { type ContractTest, counting, failureOf, isPositiveInt, transactions, yielding } from "./support.js"

export const licenseCases = (test: ContractTest): void => {
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

    test("insertMany takes an import of 10,000 licenses with imported key shapes (five groups, 128 characters)", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const long = `${"L".repeat(32)}-${"O".repeat(32)}-${"N".repeat(32)}-${"G".repeat(29)}`
        const keys = [...Array.from({ length: 9_999 }, (_, n) => `IMPRT-${n}-AAAAA-BBBBB-CCCCC`), long]
        const rows = yield* licenses.insertMany(keys.map((key) => licenseDraft({ key, source: "import" })))
        assert.strictEqual(rows.length, 10_000)
        assert.strictEqual(new Set(rows.map((l) => l.id)).size, 10_000)
        assert.strictEqual(long.length, 128)
        assert.deepStrictEqual(yield* licenses.findByKey(long), rows[9_999])
        assert.strictEqual((yield* licenses.findByKey("IMPRT-4321-AAAAA-BBBBB-CCCCC"))?.source, "import")
      }))

    test("list with idAfter walks every license by id, page after page (keyset paging)", () =>
      Effect.gen(function*() {
        const licenses = yield* Ports.LicenseRepository
        const rows = yield* licenses.insertMany([1, 2, 3, 4, 5].map((n) => licenseDraft({ key: keyOf(n) })))
        const seen: Array<number> = []
        let after = 0
        for (let round = 0; round < 10; round++) {
          const page = yield* licenses.list({ idAfter: after, page: 1, perPage: 2, orderBy: "id", order: "asc" })
          seen.push(...page.items.map((l) => l.id))
          if (page.items.length < 2) break
          after = page.items.at(-1)!.id
        }
        assert.deepStrictEqual(seen, rows.map((l) => l.id))
        // Without the count the export's walk does not need: the same page, total 0.
        const uncounted = yield* licenses.list({ idAfter: rows[1]!.id, page: 1, perPage: 2, orderBy: "id", order: "asc", withTotal: false })
        assert.deepStrictEqual(uncounted, { items: rows.slice(2, 4), total: 0 })
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
        Effect.provide(Licensing.layer.pipe(Layer.provide(Layer.merge(ActivityRecorder.layerDiscard, freshTokens)))),
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
  })
}
