/**
 * Retention of the event log (`Engine.Options.eventRetentionDays`, `LM_EVENT_RETENTION_DAYS`): the engine deletes
 * entries older than the window in the background, in small batches, and keeps the newer ones; 0 keeps all.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Engine, Model, Ports, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"

const DAY = 86_400_000
const NOW = 1_000 * DAY

const entry = (licenseId: number, at: number): Model.ActivityEntry => ({
  kind: "validate",
  licenseId,
  licenseKey: "AAAA-BBBB-CCCC-DDDD",
  machineId: null,
  fingerprint: null,
  ipAddress: null,
  appVersion: null,
  result: "valid",
  at
})

/** The entries of a log written before the engine starts: 2,500 older than 91 days, 30 at 89 days, 20 now. */
const seeded = Layer.effectContext(
  Effect.gen(function*() {
    const log = yield* Ports.ActivityLog
    yield* log.record(Array.from({ length: 2_500 }, (_, i) => entry(1, NOW - 91 * DAY - i)))
    yield* log.record(Array.from({ length: 30 }, () => entry(2, NOW - 89 * DAY)))
    yield* log.record(Array.from({ length: 20 }, () => entry(3, NOW)))
    return yield* Effect.context<Engine.StorePorts>()
  })
).pipe(Layer.provide(MemoryStore.layer))

/** The engine on the seeded store, with the event log's periodic flush out of the way of the clock's jumps. */
const engine = (options: Engine.Options) =>
  Engine.layer(seeded, { sweepIntervalSeconds: 0, activity: { flushEveryMillis: 3_600_000 }, ...options })

const counts = Effect.gen(function*() {
  const log = yield* Ports.ActivityLog
  return [yield* log.count({ licenseId: 1 }), yield* log.count({ licenseId: 2 }), yield* log.count({ licenseId: 3 })]
})

describe("event log retention", () => {
  it.effect("the engine deletes entries older than 90 days (the default) in batches on start; newer ones stay", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      yield* Effect.scoped(
        Effect.gen(function*() {
          // Three batches of 1,000 with a pause between them: the last one is deleted once the pauses passed.
          yield* TestClock.adjust("1 second")
          expect(yield* counts).toEqual([0, 30, 20])
        }).pipe(Effect.provide(engine({})))
      )
    }))

  it.effect("the engine keeps every entry with eventRetentionDays 0", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* TestClock.adjust("1 minute")
          expect(yield* counts).toEqual([2_500, 30, 20])
        }).pipe(Effect.provide(engine({ eventRetentionDays: 0 })))
      )
    }))

  it.effect("runs again every interval: entries that age past the window go at the next run", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      yield* Effect.scoped(
        Effect.gen(function*() {
          // Batches of 100 with a 100 ms pause between them: 25 batches, done in 2.5 s.
          yield* TestClock.adjust("2 seconds")
          expect((yield* counts)[0]).toBeGreaterThan(0)
          yield* TestClock.adjust("1 second")
          expect(yield* counts).toEqual([0, 30, 20])
          // Just under a day later the entries that were 89 days old are still in the window; just over, the
          // hourly run deleted them.
          yield* TestClock.adjust(`${DAY - 3_600_000} millis`)
          expect(yield* counts).toEqual([0, 30, 20])
          yield* TestClock.adjust("2 hours")
          expect(yield* counts).toEqual([0, 0, 20])
        }).pipe(
          Effect.provide(Services.EventRetention.layerBackground({ days: 90, every: "1 hour", batch: 100 }).pipe(Layer.provideMerge(seeded)))
        )
      )
    }))
})
