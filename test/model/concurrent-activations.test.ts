/**
 * CONTRACT §4: the seat check and the insert are atomic. 200 concurrent activations of distinct fingerprints on
 * a license with ceiling 5 end with exactly 5 active machines and 195 `machine_limit_exceeded`, on the memory
 * store shared by two `Licensing` instances (two server processes), both through the group commit (batches of
 * many calls) and one call per transaction. The machine repository here yields to other fibers on every read, so the activations really do
 * interleave between checking the seats and writing; a control run without the license lock shows that the
 * interleaving oversells, so the main assertion is not passing by luck of scheduling.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Licenses, Licensing, Ports, SeatBatchSettings, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { freshTokens, seededRandom, T0 } from "../../packages/domain/test/fixtures.js"

const CONCURRENT = 200
const PROCESSES = 2

/** The `Licensing` of each simulated process. */
class Processes extends Context.Service<Processes, ReadonlyArray<Licensing["Service"]>>()("test/Processes") {}

/** Transactions begun, across the store built below. */
const transactions = { count: 0 }

/** A memory store whose machine reads yield to other fibers, optionally with license "locks" that lock nothing. */
const interleavingStore = (options: { readonly lock: boolean }) =>
  Layer.syncContext(() => {
    const ports = MemoryStore.make()
    const machines = Context.get(ports, Ports.MachineRepository)
    const store = Context.get(ports, Ports.Store)
    const repository = Ports.MachineRepository.of({
      ...machines,
      listActive: (licenseId) => Effect.tap(machines.listActive(licenseId), () => Effect.yieldNow),
      findByFingerprint: (licenseId, fingerprint) => Effect.tap(machines.findByFingerprint(licenseId, fingerprint), () => Effect.yieldNow),
      listForValidation: (licenseId, fingerprint) => Effect.tap(machines.listForValidation(licenseId, fingerprint), () => Effect.yieldNow),
      listForSeatChanges: (named) => Effect.tap(machines.listForSeatChanges(named), () => Effect.yieldNow)
    })
    const licenses = Context.get(ports, Ports.LicenseRepository)
    const counted = Ports.Store.of({
      ...store,
      transaction: (effect) =>
        Effect.suspend(() => {
          transactions.count++
          return store.transaction(effect)
        })
    })
    const unlocked = Ports.LicenseRepository.of({
      ...licenses,
      lockByKey: licenses.findByKey,
      lockByKeys: (keys) => Effect.map(Effect.forEach(keys, licenses.findByKey), (found) => found.filter((l) => l !== undefined))
    })
    return ports.pipe(
      Context.add(Ports.MachineRepository, repository),
      Context.add(Ports.Store, counted),
      Context.add(Ports.LicenseRepository, options.lock ? licenses : unlocked)
    )
  })

/**
 * Licenses on the store, and `PROCESSES` separate `Licensing` instances on it, as several server processes
 * sharing one database would have: each has its own batcher, so only the store's locks keep their batches apart.
 */
const engine = (options: { readonly lock: boolean; readonly batching: Services.SeatBatchOptions }) =>
  Layer.merge(
    Licenses.layer,
    Layer.effect(
      Processes,
      Effect.forEach(Array.from({ length: PROCESSES }), () =>
        Effect.map(Layer.build(Layer.fresh(Licensing.layer)), (context) => Context.get(context, Licensing)))
    ).pipe(Layer.provide(Layer.merge(ActivityRecorder.layerDiscard, freshTokens)))
  ).pipe(
    Layer.provideMerge(interleavingStore(options)),
    Layer.provide(seededRandom(5)),
    Layer.provide(Layer.succeed(SeatBatchSettings, options.batching))
  )

const grouped: Services.SeatBatchOptions = { workers: 4, maxBatch: 16 }
const alone: Services.SeatBatchOptions = { workers: 0, maxBatch: 1 }

/** Activates CONCURRENT distinct fingerprints at once; answers the outcomes and the seats held afterwards. */
const race = Effect.gen(function*() {
  const licenses = yield* Licenses
  const processes = yield* Processes
  const key = (yield* licenses.create({ maxActivations: 5 })).license.key
  const before = transactions.count
  const outcomes = yield* Effect.forEach(
    Array.from({ length: CONCURRENT }, (_, i) => `device-${i}`),
    (fingerprint, i) =>
      processes[i % PROCESSES]!.activate({ licenseKey: key, ipAddress: null, facts: { fingerprint } }).pipe(
        Effect.match({ onSuccess: () => "activated", onFailure: (error) => error._tag })
      ),
    { concurrency: "unbounded" }
  )
  const detail = yield* licenses.get(key)
  const count = (what: string) => outcomes.filter((o) => o === what).length
  return {
    activated: count("activated"),
    refused: count("MachineLimitExceeded"),
    activationCount: detail.activationCount,
    activeRecords: detail.machines.filter((m) => m.status === "active").length,
    transactions: transactions.count - before
  }
})

describe("concurrent activations", () => {
  it.effect(`${CONCURRENT} distinct fingerprints on a license with ceiling 5 leave exactly 5 active machines (group commit)`, () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const { transactions: used, ...result } = yield* Effect.provide(race, engine({ lock: true, batching: grouped }))
      expect(result).toEqual({ activated: 5, refused: CONCURRENT - 5, activationCount: 5, activeRecords: 5 })
      // Batches of up to 16 calls, from both processes at once: at least 13 transactions, far fewer than 200.
      expect(used).toBeGreaterThanOrEqual(CONCURRENT / 16)
      expect(used).toBeLessThan(CONCURRENT / 4)
    }))

  it.effect(`${CONCURRENT} distinct fingerprints on a license with ceiling 5 leave exactly 5 active machines (one call per transaction)`, () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const result = yield* Effect.provide(race, engine({ lock: true, batching: alone }))
      expect(result).toEqual({ activated: 5, refused: CONCURRENT - 5, activationCount: 5, activeRecords: 5, transactions: CONCURRENT })
    }))

  it.effect("control: without the license lock the same interleaving oversells", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const result = yield* Effect.provide(race, engine({ lock: false, batching: alone }))
      expect(result.activeRecords).toBeGreaterThan(5)
    }))

  it.effect("control: without the license locks, the batches of two processes interleave and oversell too", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const result = yield* Effect.provide(race, engine({ lock: false, batching: grouped }))
      expect(result.activeRecords).toBeGreaterThan(5)
    }))
})
