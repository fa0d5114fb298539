/**
 * The Analytics service on the memory store: anomalies found from the event log's counters and entries, each
 * newly detected one announced once with `anomaly.detected` (in the outbox, for webhooks), again only after a
 * quiet day; the validation series and the overview read the counters the log keeps.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Analytics, Licenses, Licensing, Ports, Services } from "@lm/domain"
import { onEngine } from "./engine.js"

/** The `anomaly.detected` events of bursts of refusals in the outbox (the same refusals are also a validation spike). */
const announcements = Effect.gen(function*() {
  const outbox = yield* Ports.EventOutbox
  return (yield* outbox.readAfter(0, 1_000)).filter((e) => e.type === "anomaly.detected" && e.data.type === "failed_validation_burst")
})

const bursts = Effect.gen(function*() {
  const analytics = yield* Services.Analytics
  return (yield* analytics.anomalies).filter((a) => a.type === "failed_validation_burst")
})

describe("Analytics service", () => {
  it.effect("a burst of refusals is announced once, and again after a quiet day when it happens again", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const recorder = yield* ActivityRecorder
      const { license } = yield* licenses.create({ maxActivations: 1 })
      const refuse = (n: number) =>
        Effect.forEach(Array.from({ length: n }), () => licensing.validate({ licenseKey: license.key, fingerprint: "nope", ipAddress: null }), {
          discard: true
        })
      yield* refuse(19)
      yield* recorder.flush
      assert.deepStrictEqual(yield* bursts, [], "19 refusals are not a burst (default threshold 20)")
      yield* refuse(1)
      yield* recorder.flush
      const found = yield* bursts
      assert.deepStrictEqual(found.map((a) => [a.licenseKey, a.type, a.detail]), [[license.key, "failed_validation_burst", "20 refusals in an hour"]])
      const first = yield* announcements
      assert.strictEqual(first.length, 1)
      assert.deepStrictEqual(first[0]!.data, {
        license_key: license.key,
        type: "failed_validation_burst",
        detail: "20 refusals in an hour",
        detected_at: new Date(found[0]!.detectedAt).toISOString()
      })
      // Asked again (and later within the hour): still current, not announced again.
      yield* TestClock.adjust("10 minutes")
      assert.deepStrictEqual((yield* bursts).map((a) => a.detectedAt), [found[0]!.detectedAt])
      assert.strictEqual((yield* announcements).length, 1)
      // Two hours later the burst is over; a new one a day later is announced again.
      yield* TestClock.adjust("2 hours")
      assert.deepStrictEqual(yield* bursts, [])
      yield* TestClock.adjust("1 day")
      yield* refuse(20)
      yield* recorder.flush
      assert.strictEqual((yield* bursts).length, 1)
      assert.strictEqual((yield* announcements).length, 2)
    })))

  it.effect("the background job announces a new anomaly once over its rounds, without anyone asking", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const recorder = yield* ActivityRecorder
      const { license } = yield* licenses.create({ maxActivations: 1 })
      // The job runs once at start (nothing to find), then every minute.
      yield* Layer.launch(Services.Analytics.layerBackground("1 minute")).pipe(Effect.forkScoped)
      yield* Effect.yieldNow
      yield* Effect.forEach(Array.from({ length: 20 }), () => licensing.validate({ licenseKey: license.key, fingerprint: "nope", ipAddress: null }), {
        discard: true
      })
      yield* recorder.flush
      assert.strictEqual((yield* announcements).length, 0, "not before the next round")
      for (let round = 0; round < 5; round++) yield* TestClock.adjust("1 minute")
      const announced = yield* announcements
      assert.strictEqual(announced.length, 1)
      assert.strictEqual(announced[0]!.data.license_key, license.key)
      // A round run by hand (another process's, say) finds nothing new either.
      assert.strictEqual(yield* (yield* Services.Analytics).detectOnce, 0)
    }).pipe(Effect.scoped)))

  it.effect("a validation spike is an hour above 3 times the 7-day hourly mean, and at least 20", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const recorder = yield* ActivityRecorder
      const analytics = yield* Services.Analytics
      const { license } = yield* licenses.create({})
      const validate = (n: number) =>
        Effect.forEach(Array.from({ length: n }), () => licensing.validate({ licenseKey: license.key, ipAddress: null }), { discard: true })
      // A week at 10 an hour: 1680 validations, a mean of 10.
      for (let day = 0; day < 7; day++) {
        yield* validate(240)
        yield* recorder.flush
        yield* TestClock.adjust("1 day")
      }
      yield* validate(30)
      yield* recorder.flush
      assert.deepStrictEqual(yield* analytics.anomalies, [], "30 is not more than 3 x 10")
      yield* validate(1)
      yield* recorder.flush
      const found = yield* analytics.anomalies
      assert.deepStrictEqual(found.map((a) => a.type), ["validation_spike"])
    })))

  it.effect("top licenses count the period's last hours: a validation leaves the 7-day list when its hour does", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const recorder = yield* ActivityRecorder
      const analytics = yield* Services.Analytics
      const repo = yield* Ports.AnalyticsRepository
      const { license } = yield* licenses.create({})
      // At the start of an hour, so that the clock moves by whole hours below.
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* TestClock.adjust(`${Analytics.bucketStart(now, "hour") + 3_600_000 - now} millis`)
      yield* licensing.validate({ licenseKey: license.key, ipAddress: null })
      yield* recorder.flush
      const top = (period: "7d" | "30d") => Effect.map(analytics.overview(period), (o) => o.topLicenses)
      assert.deepStrictEqual(yield* top("7d"), [{ licenseKey: license.key, validations: 1 }])
      // 167 hours on, its hour is the oldest of the 168 the 7 days count; one more and it is out (not of 30 days).
      yield* TestClock.adjust("167 hours")
      assert.deepStrictEqual(yield* top("7d"), [{ licenseKey: license.key, validations: 1 }])
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(yield* top("7d"), [])
      assert.deepStrictEqual(yield* top("30d"), [{ licenseKey: license.key, validations: 1 }])
      // The background job moves the windows too (here past the 30 days), without an overview asked for.
      yield* TestClock.adjust("30 days")
      yield* Layer.launch(Services.Analytics.layerBackground("1 minute")).pipe(Effect.forkScoped)
      yield* Effect.yieldNow
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* repo.topLicenses("30d", 10), [])
    }).pipe(Effect.scoped)))

  it.effect("the series counts what the recorder wrote, per hour, with empty hours zero", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      const licensing = yield* Licensing
      const recorder = yield* ActivityRecorder
      const analytics = yield* Services.Analytics
      const { license } = yield* licenses.create({ productId: 3 })
      const start = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* licensing.validate({ licenseKey: license.key, ipAddress: null })
      yield* TestClock.adjust("2 hours")
      yield* licensing.validate({ licenseKey: license.key, fingerprint: "x", ipAddress: null })
      yield* recorder.flush
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      const series = yield* analytics.validations({ from: start, to: now + 1, interval: "hour", productId: 3 })
      assert.deepStrictEqual(series.series.map((p) => [p.total, p.valid, p.invalid]), [[1, 1, 0], [0, 0, 0], [1, 0, 1]])
      assert.strictEqual(series.series[0]!.t, Analytics.bucketStart(start, "hour"))
    })))
})
