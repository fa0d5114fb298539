/**
 * `LM_SEAT_BATCH_WORKERS` (README settings): the bundled server's engine groups concurrent seat changes into
 * shared transactions by default, and gives every call its own transaction with `0`, with the same answers.
 */
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { Engine, Licenses, Licensing, Ports } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { describe, expect, it } from "vitest"
import { engineOptionsFromEnv } from "../src/settings/Engine.js"

/** The memory store, counting the transactions begun. */
const countingStore = (counter: { transactions: number }) =>
  Layer.effectContext(Effect.gen(function*() {
    const store = yield* Ports.Store
    return Context.make(Ports.Store, Ports.Store.of({
      ...store,
      transaction: (effect) => Effect.suspend(() => {
        counter.transactions++
        return store.transaction(effect)
      })
    }))
  })).pipe(Layer.provideMerge(MemoryStore.layer))

/** 32 activations at once on a license with 20 seats: the codes answered and the transactions they took. */
const burst = (options: Engine.Options) => {
  const counter = { transactions: 0 }
  return Effect.gen(function*() {
    const { license } = yield* (yield* Licenses).create({ maxActivations: 20 })
    const licensing = yield* Licensing
    const before = counter.transactions
    const codes = yield* Effect.forEach(
      Array.from({ length: 32 }, (_, i) => `host-${i}`),
      (fingerprint) =>
        licensing.activate({ licenseKey: license.key, facts: { fingerprint }, ipAddress: null }).pipe(
          Effect.map((r) => (r.created ? "created" : "already")),
          Effect.catch((e) => Effect.succeed(e.code))
        ),
      { concurrency: "unbounded" }
    )
    return { codes: codes.sort(), transactions: counter.transactions - before }
  }).pipe(
    Effect.provide(Engine.layer(countingStore(counter), { sweepIntervalSeconds: 0, ...options })),
    Effect.scoped,
    Effect.runPromise
  )
}

describe("LM_SEAT_BATCH_WORKERS", () => {
  it("is read from the environment (unset: the engine's default)", () => {
    const read = (env: Record<string, string>) =>
      Effect.runSync(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
    expect(read({}).seatBatchWorkers).toBeUndefined()
    expect(read({ LM_SEAT_BATCH_WORKERS: "0" }).seatBatchWorkers).toBe(0)
    expect(read({ LM_SEAT_BATCH_WORKERS: "4" }).seatBatchWorkers).toBe(4)
  })

  it("groups concurrent activations into shared transactions by default, one each with 0, same answers", async () => {
    const grouped = await burst({})
    const alone = await burst({ seatBatchWorkers: 0 })
    const expected = [...Array(20).fill("created"), ...Array(12).fill("machine_limit_exceeded")].sort()
    expect(grouped.codes).toEqual(expected)
    expect(alone.codes).toEqual(expected)
    expect(alone.transactions).toBe(32)
    expect(grouped.transactions).toBeLessThan(16)
  })
})

describe("LM_EVENT_RETENTION_DAYS", () => {
  it("is read from the environment (unset: the engine's default, 90 days)", () => {
    const read = (env: Record<string, string>) =>
      Effect.runSync(Effect.provide(engineOptionsFromEnv({ _tag: "memory" }), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
    expect(read({}).eventRetentionDays).toBe(90)
    expect(read({ LM_EVENT_RETENTION_DAYS: "0" }).eventRetentionDays).toBe(0)
    expect(read({ LM_EVENT_RETENTION_DAYS: "30" }).eventRetentionDays).toBe(30)
  })
})
