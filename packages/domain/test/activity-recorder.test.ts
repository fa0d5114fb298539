/**
 * The event log writer: entries are buffered and written in batches off the caller's path; a burst never starts
 * more than one writer at a time, and everything buffered is written when the layer closes. A store outage is
 * logged once when writes start failing and once, with the count of failed attempts, when one succeeds again.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Errors, Model, Ports } from "@lm/domain"
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
      count: () => Effect.succeed(written.length),
      prune: () => Effect.succeed(0)
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

describe("ActivityRecorder while the store is down", () => {
  it.effect("holds at most maxBuffered entries, drops the oldest, counts and logs the drops, then writes the newest", () => {
    const written: Array<Model.ActivityEntry> = []
    let down = true
    const log = Layer.succeed(Ports.ActivityLog, {
      record: (entries) =>
        down
          ? Effect.fail(new Errors.StorageUnavailable({ message: "store down" }))
          : Effect.sync(() => void written.push(...entries)),
      count: () => Effect.succeed(written.length),
      prune: () => Effect.succeed(0)
    })
    const warnings: Array<string> = []
    const logger = Logger.make((options) => {
      if (options.logLevel === "Warn") warnings.push(String(Array.isArray(options.message) ? options.message[0] : options.message))
    })
    const bound = 1_000
    const pushed = 2_500
    return Effect.gen(function*() {
      const recorder = yield* ActivityRecorder
      for (let i = 0; i < pushed; i++) yield* recorder.record(entry(i))
      yield* recorder.flush // fails: the store is down
      const dropped = yield* recorder.dropped
      expect(dropped).toBeGreaterThanOrEqual(pushed - bound)
      expect(dropped).toBeLessThanOrEqual(pushed - bound + bound / 100)
      // One line when the drops begin, none per dropped entry.
      expect(warnings.filter((w) => w.includes("dropping the oldest"))).toHaveLength(1)

      down = false
      yield* recorder.flush
      // What was held is written: the newest entries, in order, as many as were not dropped (at most the bound).
      expect(written.length).toBe(pushed - dropped)
      expect(written.length).toBeLessThanOrEqual(bound)
      expect(written.map((e) => e.at)).toEqual(Array.from({ length: pushed - dropped }, (_, i) => dropped + i))
      // One line with the outage's count once the store took entries again.
      expect(warnings.filter((w) => w.includes("entries dropped"))).toEqual([`event log: ${dropped} entries dropped (the oldest) while the store could not take them`])
    }).pipe(
      Effect.provide(ActivityRecorder.layer({ flushEveryMillis: 60_000, maxBatch: 100, maxBuffered: bound }).pipe(Layer.provide(log))),
      Effect.provide(Logger.layer([logger]))
    )
  })

  it.effect("logs an outage once when writes start failing, and once with the count of failed attempts when one succeeds", () => {
    const written: Array<Model.ActivityEntry> = []
    let down = true
    let failed = 0
    const log = Layer.succeed(Ports.ActivityLog, {
      record: (entries) =>
        down
          ? Effect.suspend(() => {
            failed++
            return Effect.fail(new Errors.StorageUnavailable({ message: "store down" }))
          })
          : Effect.sync(() => void written.push(...entries)),
      count: () => Effect.succeed(written.length),
      prune: () => Effect.succeed(0)
    })
    const lines: Array<string> = []
    const logger = Logger.make((options) => {
      lines.push(`${options.logLevel}: ${String(Array.isArray(options.message) ? options.message[0] : options.message)}`)
    })
    return Effect.gen(function*() {
      const recorder = yield* ActivityRecorder
      yield* recorder.record(entry(1))
      // The writer retries every 250 ms: a dozen failed attempts, one line.
      yield* TestClock.adjust("3 seconds")
      yield* recorder.record(entry(2))
      yield* TestClock.adjust("3 seconds")
      expect(failed).toBeGreaterThanOrEqual(20)
      expect(lines).toEqual([
        "Warn: event log write failed (store down); 1 entries kept and retried every 250 ms (beyond 100000 the oldest are dropped); logged again when a write succeeds"
      ])

      down = false
      yield* TestClock.adjust("250 millis")
      expect(written.map((e) => e.at)).toEqual([1, 2])
      expect(lines.slice(1)).toEqual([`Info: event log writes succeed again after ${failed} failed attempts in 6 s`])
      yield* TestClock.adjust("1 second")
      expect(lines).toHaveLength(2)

      // The next outage is logged again.
      down = true
      yield* recorder.record(entry(3))
      yield* TestClock.adjust("1 second")
      expect(lines.slice(2).map((line) => line.slice(0, 30))).toEqual(["Warn: event log write failed ("])
    }).pipe(
      Effect.provide(ActivityRecorder.layer({ flushEveryMillis: 250 }).pipe(Layer.provide(log))),
      Effect.provide(Logger.layer([logger]))
    )
  })
})
