/**
 * The analytics overview's subscription figures over real HTTP (CONTRACT §11, issue 17), on the memory store
 * and on PGlite: subscriptions counted per status, and MRR per currency from the active and pending-cancel ones,
 * each price normalised to one month (the domain's `Billing.monthlyRecurring`), as the currency's decimal string.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"
import { expectOk } from "./support/Management.js"

const subscribe = async (app: TestApp, body: Record<string, unknown>) =>
  expectOk(await app.call("POST", "/subscriptions", { body: { user_id: 7, billing_interval: 1, ...body } }), 201)

for (const store of ["memory", "pglite"] as const) {
  describe(`the overview's subscription figures on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store)
    })
    afterAll(() => app?.close())

    it("counts subscriptions per status and sums MRR per currency over active and pending-cancel ones", async () => {
      const figures = async () => expectOk(await app.call("GET", "/analytics/overview?period=7d")).subscriptions
      expect(await figures()).toEqual({
        by_status: { pending: 0, trial: 0, active: 0, "on-hold": 0, "pending-cancel": 0, cancelled: 0, expired: 0 },
        mrr: []
      })
      // USD: 30.00 a month, 120.00 a year (10.00 a month), 12.00 a week (52.00 a month), 19.99 every 3 months
      // (6.663… a month); pending-cancel still pays until its period ends: 30.00 + 10.00 + 52.00 + 6.66 = 98.66.
      await subscribe(app, { billing_period: "month", amount: "30.00", currency: "USD" })
      await subscribe(app, { billing_period: "year", amount: "120.00", currency: "USD" })
      await subscribe(app, { billing_period: "week", amount: "12.00", currency: "USD" })
      const quarterly = await subscribe(app, { billing_period: "month", billing_interval: 3, amount: "19.99", currency: "USD" })
      expectOk(await app.call("POST", `/subscriptions/${quarterly.id}/cancel`, { body: { at_period_end: true } }))
      // JPY has no decimals: 1000 a year is 83.33… yen a month, 83.
      await subscribe(app, { billing_period: "year", amount: "1000", currency: "JPY" })
      // Not paying now: a trial, a paused (on-hold) one and a cancelled one.
      await subscribe(app, { billing_period: "month", amount: "500.00", currency: "USD", trial_days: 14 })
      const paused = await subscribe(app, { billing_period: "month", amount: "500.00", currency: "USD" })
      expectOk(await app.call("POST", `/subscriptions/${paused.id}/pause`))
      const ended = await subscribe(app, { billing_period: "month", amount: "500.00", currency: "JPY" })
      expectOk(await app.call("POST", `/subscriptions/${ended.id}/cancel`, { body: { at_period_end: false } }))
      expect(await figures()).toEqual({
        by_status: { pending: 0, trial: 1, active: 4, "on-hold": 1, "pending-cancel": 1, cancelled: 1, expired: 0 },
        mrr: [{ currency: "JPY", amount: "83" }, { currency: "USD", amount: "98.66" }]
      })
    })
  })
}
