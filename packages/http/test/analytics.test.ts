/**
 * Analytics over real HTTP (CONTRACT §11), on the memory store and on PGlite: what an operator sees after a
 * few licenses are issued, activated and validated — the overview, the validation series and its filters, the
 * anomalies, the expiring licenses — and every refusal of the query parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../../../test/support/eventually.js"
import { startApp, type TestApp } from "./support/App.js"
import { activate, createLicense, daysFromNow, expectError, expectInvalid, expectOk, isoTime, unique } from "./support/Management.js"

const HOUR = 3_600_000
const DAY = 24 * HOUR

for (const store of ["memory", "pglite"] as const) {
  describe(`analytics routes on ${store}`, () => {
    let app: TestApp
    const product = unique()
    let a: string
    let b: string
    let c: string
    const validate = (license_key: string, fingerprint: string) =>
      app.call("POST", "/validate", { body: { license_key, fingerprint }, auth: null })

    beforeAll(async () => {
      // Low thresholds for the two kinds this walk-through causes; the others out of reach.
      app = await startApp(store, {
        anomalyThresholds: { fingerprintChurn: 3, failedBurst: 4, ipChurn: 1000, spikeMinimum: 1000 },
        activity: { flushEveryMillis: 20 }
      })
      a = (await createLicense(app, { product_id: product, max_activations: 5, expires_at: daysFromNow(3) })).license_key
      b = (await createLicense(app, { expires_at: daysFromNow(20) })).license_key
      c = (await createLicense(app, { max_activations: 2, expires_at: daysFromNow(40) })).license_key
      expectOk(await app.call("POST", `/licenses/${c}/suspend`))
      await activate(app, a, "a1", { app_version: "1.0" })
      await activate(app, a, "a2")
      await activate(app, a, "a3", { app_version: "2.0" })
      await activate(app, b, "b1", { app_version: "2.0" })
      for (let i = 0; i < 2; i++) expect((await validate(a, "a1")).body.data.valid).toBe(true)
      for (let i = 0; i < 4; i++) expect((await validate(a, "not-activated")).body.data.valid).toBe(false)
      expect((await validate(b, "b1")).body.data.valid).toBe(true)
      expectError(await validate("ZZZZ-ZZZZ-ZZZZ-ZZZZ", "x"), 404, "license_not_found")
    })
    afterAll(() => app?.close())

    it("the overview shows licenses, seats, validations, activations, expiring licenses, app versions and top licenses within seconds", async () => {
      const overview = await eventually(async () => {
        const data = expectOk(await app.call("GET", "/analytics/overview?period=7d"))
        expect(data.validations).toEqual({ total: 8, valid: 3, invalid: 5 })
        return data
      }, { timeout: 5_000 })
      expect(overview).toEqual({
        licenses: {
          total: 3,
          by_status: { pending: 0, inactive: 0, active: 2, expired: 0, suspended: 1, revoked: 0, terminated: 0 }
        },
        seats: { active_machines: 3, total_seats: 5, utilization: 0.6 },
        validations: { total: 8, valid: 3, invalid: 5 },
        activations: 4,
        subscriptions: { by_status: { pending: 0, trial: 0, active: 0, "on-hold": 0, "pending-cancel": 0, cancelled: 0, expired: 0 }, mrr: [] },
        expiring: { in_7_days: 1, in_30_days: 2 },
        app_versions: [{ app_version: "2.0", machines: 2 }, { app_version: "1.0", machines: 1 }, { app_version: null, machines: 1 }],
        top_licenses: [{ license_key: a, validations: 6 }, { license_key: b, validations: 1 }]
      })
      // The period defaults to 30 days; another period reads the same counters.
      expect(expectOk(await app.call("GET", "/analytics/overview")).validations).toEqual({ total: 8, valid: 3, invalid: 5 })
      expect(expectOk(await app.call("GET", "/analytics/overview?period=90d")).activations).toBe(4)
      expectInvalid(await app.call("GET", "/analytics/overview?period=1y"), "period")
    })

    it("the validation series is dense, in hour or day buckets, filtered by license or product", async () => {
      const now = Date.now()
      const from = new Date(now - 2 * HOUR).toISOString()
      const to = new Date(now + HOUR).toISOString()
      const series = async (query: string) => expectOk(await app.call("GET", `/analytics/validations?${query}`))
      const hourly = await eventually(async () => {
        const data = expectOk(await app.call("GET", `/analytics/validations?interval=hour&from=${from}&to=${to}`))
        expect(data.series.reduce((n: number, p: any) => n + p.total, 0)).toBe(8)
        return data
      }, { timeout: 5_000 })
      expect(hourly.interval).toBe("hour")
      expect(hourly.from).toBe(from)
      expect(hourly.to).toBe(to)
      expect(hourly.series).toHaveLength(4)
      hourly.series.forEach((p: any, i: number) => {
        expect(p.t).toMatch(isoTime)
        expect(Date.parse(p.t)).toBe(Math.floor((now - 2 * HOUR) / HOUR) * HOUR + i * HOUR)
        expect(p.total).toBe(p.valid + p.invalid)
      })
      expect(hourly.series.filter((p: any) => p.total === 0).length).toBeGreaterThanOrEqual(1)

      const daily = await series("")
      expect(daily.interval).toBe("day")
      expect(Date.parse(daily.to) - Date.parse(daily.from)).toBe(30 * DAY)
      expect(daily.series.length).toBeGreaterThanOrEqual(30)
      expect(daily.series.map((p: any) => Date.parse(p.t) % DAY)).toEqual(daily.series.map(() => 0))
      expect(daily.series.reduce((n: number, p: any) => n + p.total, 0)).toBe(8)

      const sum = (data: any) =>
        data.series.reduce((s: any, p: any) => ({ total: s.total + p.total, valid: s.valid + p.valid, invalid: s.invalid + p.invalid }), {
          total: 0,
          valid: 0,
          invalid: 0
        })
      expect(sum(await series(`license_key=${a}`))).toEqual({ total: 6, valid: 2, invalid: 4 })
      expect(sum(await series(`license_key=${b}`))).toEqual({ total: 1, valid: 1, invalid: 0 })
      expect(sum(await series(`product_id=${product}`))).toEqual({ total: 6, valid: 2, invalid: 4 })
      expect(sum(await series(`product_id=${unique()}`))).toEqual({ total: 0, valid: 0, invalid: 0 })
      expect(sum(await series(`license_key=${b}&product_id=${product}`))).toEqual({ total: 0, valid: 0, invalid: 0 })
    })

    it("refuses more than 1000 buckets, a range that ends before it starts, an unknown license and bad parameters", async () => {
      const start = Date.UTC(2026, 0, 1)
      const at = (ms: number) => new Date(ms).toISOString()
      expectOk(await app.call("GET", `/analytics/validations?interval=hour&from=${at(start)}&to=${at(start + 1000 * HOUR)}`))
      expectInvalid(await app.call("GET", `/analytics/validations?interval=hour&from=${at(start)}&to=${at(start + 1000 * HOUR + 1)}`), "from")
      expectInvalid(await app.call("GET", `/analytics/validations?interval=day&from=${at(start)}&to=${at(start + 1001 * DAY)}`), "from")
      expectInvalid(await app.call("GET", `/analytics/validations?from=${at(start)}&to=${at(start)}`), "from")
      expectInvalid(await app.call("GET", "/analytics/validations?interval=week"), "interval")
      expectInvalid(await app.call("GET", "/analytics/validations?from=yesterday"), "from")
      expectInvalid(await app.call("GET", "/analytics/validations?product_id=0"), "product_id")
      expectError(await app.call("GET", "/analytics/validations?license_key=ZZZZ-ZZZZ-ZZZZ-ZZZZ"), 404, "license_not_found")
      expectError(await app.call("GET", "/analytics/validations", { auth: null }), 401, "rest_unauthorized")
    })

    it("anomalies: new fingerprints and a burst of refusals on one license, with the time they were detected", async () => {
      const data = await eventually(async () => {
        const found = expectOk(await app.call("GET", "/analytics/anomalies"))
        expect(found.anomalies).toHaveLength(2)
        return found
      }, { timeout: 5_000 })
      expect(data.anomalies).toEqual([
        { license_key: a, type: "fingerprint_churn", detail: "3 new fingerprints in 24 hours", detected_at: expect.stringMatching(isoTime) },
        { license_key: a, type: "failed_validation_burst", detail: "4 refusals in an hour", detected_at: expect.stringMatching(isoTime) }
      ])
      // Still current on the next request, with the time it was first detected.
      const again = expectOk(await app.call("GET", "/analytics/anomalies"))
      expect(again).toEqual(data)
    })

    it("expiring licenses within a number of days, soonest first", async () => {
      const keys = async (query: string) => expectOk(await app.call("GET", `/analytics/expiring${query}`)).licenses.map((l: any) => l.license_key)
      expect(await keys("?days=7")).toEqual([a])
      expect(await keys("")).toEqual([a, b])
      expect(await keys("?days=60")).toEqual([a, b, c])
      expect(await keys("?days=0")).toEqual([])
      const [first] = expectOk(await app.call("GET", "/analytics/expiring?days=7")).licenses
      expect(first).toMatchObject({ license_key: a, status: "active", product_id: product, activation_count: 3 })
      expectInvalid(await app.call("GET", "/analytics/expiring?days=-1"), "days")
      expectInvalid(await app.call("GET", "/analytics/expiring?days=36501"), "days")
      expectInvalid(await app.call("GET", "/analytics/expiring?days=x"), "days")
    })
  })
}
