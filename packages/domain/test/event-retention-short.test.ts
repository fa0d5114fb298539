/**
 * A short event-log retention window (`eventRetentionDays` below a day, `LM_EVENT_RETENTION_DAYS=0.001`) is kept
 * short: the background job runs every tenth of the window (at most every hour), so entries are deleted soon
 * after they leave it, not up to an hour later.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Engine, Model, Ports, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"

const NOW = 1_000 * 86_400_000

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

/** Entries written before the engine starts: 5 two minutes old (license 1), 7 now (license 2). */
const seeded = Layer.effectContext(
  Effect.gen(function*() {
    const log = yield* Ports.ActivityLog
    yield* log.record(Array.from({ length: 5 }, () => entry(1, NOW - 120_000)))
    yield* log.record(Array.from({ length: 7 }, () => entry(2, NOW)))
    return yield* Effect.context<Engine.StorePorts>()
  })
).pipe(Layer.provide(MemoryStore.layer))

const counts = Effect.gen(function*() {
  const log = yield* Ports.ActivityLog
  return [yield* log.count({ licenseId: 1 }), yield* log.count({ licenseId: 2 })]
})

describe("a short event-log retention window", () => {
  it("runs every tenth of the window, from 1 second to 1 hour", () => {
    expect(Duration.toMillis(Services.EventRetention.defaultEvery(0.001))).toBe(8_640)
    expect(Duration.toMillis(Services.EventRetention.defaultEvery(90))).toBe(3_600_000)
    expect(Duration.toMillis(Services.EventRetention.defaultEvery(0.000001))).toBe(1_000)
  })

  it.effect("deletes entries within a tenth of the window after they leave it (0.001 days = 86.4 s)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* TestClock.adjust("1 second")
          expect(yield* counts).toEqual([0, 7])
          // The entries of NOW leave the window at NOW + 86.4 s; the next run is at most 8.64 s later.
          yield* TestClock.adjust("80 seconds")
          expect(yield* counts).toEqual([0, 7])
          yield* TestClock.adjust("16 seconds")
          expect(yield* counts).toEqual([0, 0])
        }).pipe(Effect.provide(Engine.layer(seeded, {
          sweepIntervalSeconds: 0,
          eventRetentionDays: 0.001,
          activity: { flushEveryMillis: 3_600_000 }
        })))
      )
    }))
})
