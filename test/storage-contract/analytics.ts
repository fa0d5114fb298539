/** The storage contract of AnalyticsRepository: the hourly counters, top licenses, seats, anomalies. */
import { assert, describe } from "@effect/vitest"
import { Analytics, Model, Ports } from "@lm/domain"
import { Effect, Exit } from "effect"
import { activity, DAY, keyOf, licenseDraft, machineDraft, T0 } from "./fixtures.js"
import { Boom, type ContractTest } from "./support.js"

export const analyticsCases = (test: ContractTest): void => {
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
}
