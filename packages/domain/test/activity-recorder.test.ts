/**
 * The event log writer: entries are buffered and written in batches off the caller's path; a burst never starts
 * more than one writer at a time, and everything buffered is written when the layer closes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ActivityRecorder, Model, Ports } from "@lm/domain"
import { eventuallyEffect } from "../../../test/support/eventually.js"

const entry = (i: number): Model.ActivityEntry => ({
  kind: "validate",
  licenseId: 1,
  licenseKey: "AAAA-BBBB-CCCC-DDDD",
  machineId: null,
  fingerprint: null,
  ipAddress: null,
  appVersion: null,
  result: `r${i}`,
  at: i
})

describe("ActivityRecorder", () => {
  it.live("writes a burst in full batches with one writer at a time, and flushes the rest on close", () => {
    const written: Array<Model.ActivityEntry> = []
    let calls = 0
    let inFlight = 0
    let maxInFlight = 0
    const log = Layer.succeed(Ports.ActivityLog, {
      record: (entries) =>
        Effect.gen(function*() {
          calls++
          maxInFlight = Math.max(maxInFlight, ++inFlight)
          yield* Effect.sleep("2 millis") // a store write takes a while
          written.push(...entries)
          inFlight--
        }),
      count: () => Effect.succeed(written.length)
    })
    return Effect.gen(function*() {
      yield* Effect.scoped(
        Effect.gen(function*() {
          const recorder = yield* ActivityRecorder
          for (let i = 0; i < 5_000; i++) yield* recorder.record(entry(i))
          // The background writer drains full batches (the next periodic flush is a minute away): less than one is left.
          yield* eventuallyEffect(Effect.sync(() => expect(written.length).toBeGreaterThan(5_000 - 500)))
        }).pipe(Effect.provide(ActivityRecorder.layer({ flushEveryMillis: 60_000, maxBatch: 500 }).pipe(Layer.provide(log))))
      )
      expect(written.map((e) => e.at)).toEqual(Array.from({ length: 5_000 }, (_, i) => i))
      expect(maxInFlight).toBe(1)
      expect(calls).toBeLessThanOrEqual(12)
    })
  })
})
