/**
 * The analytics rules (CONTRACT §11): what an event-log entry counts as, the hourly counters a batch adds,
 * dense series in hour and day buckets, and the validation-spike rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { Analytics, type Model } from "@lm/domain"

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T = Date.UTC(2026, 0, 10, 12, 30)

const entry = (overrides: Partial<Model.ActivityEntry> = {}): Model.ActivityEntry => ({
  kind: "validate",
  licenseId: 1,
  licenseKey: "K",
  machineId: null,
  fingerprint: null,
  ipAddress: null,
  appVersion: null,
  result: "valid",
  at: T,
  ...overrides
})

describe("analytics rules", () => {
  it("a refusal is any call that did not succeed; a validation is valid only when it answered valid", () => {
    expect(Analytics.isRefusal(entry({ result: "license_expired" }))).toBe(true)
    expect(Analytics.isRefusal(entry({ kind: "heartbeat", result: "machine_inactive" }))).toBe(true)
    for (const result of ["valid", "activated", "already_active", "deactivated", "ok"]) expect(Analytics.isRefusal(entry({ result }))).toBe(false)
    expect(Analytics.isValidValidation(entry())).toBe(true)
    expect(Analytics.isValidValidation(entry({ result: "fingerprint_not_activated" }))).toBe(false)
    expect(Analytics.isValidValidation(entry({ kind: "activate", result: "valid" }))).toBe(false)
  })

  it("an overview period counts its last hours whole, the current one included", () => {
    const hour = Analytics.bucketStart(T, "hour")
    expect(Analytics.periodStart("7d", T)).toBe(hour + HOUR - 7 * DAY)
    expect((hour + HOUR - Analytics.periodStart("7d", T)) / HOUR).toBe(168)
    expect(Analytics.periodStart("90d", hour)).toBe(Analytics.periodStart("90d", hour + HOUR - 1))
    expect(Analytics.periodStart("30d", hour + HOUR)).toBe(Analytics.periodStart("30d", hour) + HOUR)
  })

  it("a batch adds one counter row per license and per product and hour", () => {
    const rows = Analytics.hourlyCountsOf([
      entry({ productId: 4 }),
      entry({ productId: 4, result: "blacklisted" }),
      entry({ licenseId: null, result: "license_not_found" }),
      entry({ productId: 4, kind: "activate", result: "activated", at: T + HOUR })
    ])
    const hour = Date.UTC(2026, 0, 10, 12)
    expect(rows).toEqual(expect.arrayContaining([
      { scope: "license", scopeId: 1, hour, valid: 1, invalid: 1, refused: 1, activations: 0 },
      { scope: "product", scopeId: 4, hour, valid: 1, invalid: 1, refused: 1, activations: 0 },
      { scope: "license", scopeId: Analytics.noLicense, hour, valid: 0, invalid: 1, refused: 1, activations: 0 },
      { scope: "product", scopeId: Analytics.noProduct, hour, valid: 0, invalid: 1, refused: 1, activations: 0 },
      { scope: "license", scopeId: 1, hour: hour + HOUR, valid: 0, invalid: 0, refused: 0, activations: 1 },
      { scope: "product", scopeId: 4, hour: hour + HOUR, valid: 0, invalid: 0, refused: 0, activations: 1 }
    ]))
    expect(rows).toHaveLength(6)
  })

  it("a series is dense: every bucket of the range, empty ones zero", () => {
    const day0 = Date.UTC(2026, 0, 10)
    const hours = [
      { hour: day0 + 3 * HOUR, valid: 2, invalid: 1, refused: 1, activations: 0 },
      { hour: day0 + 5 * HOUR, valid: 1, invalid: 0, refused: 0, activations: 0 },
      { hour: day0 + 2 * DAY, valid: 0, invalid: 4, refused: 4, activations: 0 }
    ]
    expect(Analytics.denseSeries(hours, day0, day0 + 3 * DAY, "day")).toEqual([
      { t: day0, total: 4, valid: 3, invalid: 1 },
      { t: day0 + DAY, total: 0, valid: 0, invalid: 0 },
      { t: day0 + 2 * DAY, total: 4, valid: 0, invalid: 4 }
    ])
    const hourly = Analytics.denseSeries(hours, day0 + 2 * HOUR, day0 + 6 * HOUR, "hour")
    expect(hourly.map((p) => p.total)).toEqual([0, 3, 0, 1])
    expect(Analytics.bucketCount(day0, day0 + 1000 * HOUR, "hour")).toBe(1000)
    expect(Analytics.bucketCount(day0, day0 + 1000 * HOUR + 1, "hour")).toBe(1001)
  })

  it("a spike is more than 3 times the 7-day hourly mean and at least 20", () => {
    const t = Analytics.defaultAnomalyThresholds
    expect(Analytics.isValidationSpike(20, 0, t)).toBe(true)
    expect(Analytics.isValidationSpike(19, 0, t)).toBe(false)
    // 7 days of 10 an hour: the mean is 10, so 31 is a spike and 30 is not.
    expect(Analytics.isValidationSpike(31, 10 * 168, t)).toBe(true)
    expect(Analytics.isValidationSpike(30, 10 * 168, t)).toBe(false)
  })
})
