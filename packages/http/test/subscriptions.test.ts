/**
 * Subscriptions over real HTTP (CONTRACT §10), on the memory store and on PGlite: every route and its refusals,
 * money as exact decimal strings in the currency, the bound license following (validate refused at once while
 * on-hold, fine again after resume), proration on a switch, cancel at the period end, renewals with a
 * transaction id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"
import { eventually } from "../../../test/support/eventually.js"
import { createLicense, expectError, expectInvalid, expectList, expectOk, isoTime, unique } from "./support/Management.js"

const subscribe = async (app: TestApp, body: Record<string, unknown> = {}) =>
  expectOk(await app.call("POST", "/subscriptions", {
    body: { user_id: 7, billing_period: "month", billing_interval: 1, amount: "30.00", currency: "USD", ...body }
  }), 201)

const validate = async (app: TestApp, key: string) => expectOk(await app.call("POST", "/validate", { body: { license_key: key }, auth: null }))

for (const store of ["memory", "pglite"] as const) {
  describe(`subscriptions on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(async () => {
      await app?.close()
    })

    it("POST creates the subscription and its license, which expires at the period end; GET adds the license", async () => {
      const product = unique()
      const created = await subscribe(app, { product_id: product, payment_method: "card", license: { max_activations: 3 }, items: [{ amount: "5.50", quantity: 2 }] })
      expect(created).toMatchObject({
        id: expect.any(Number),
        status: "active",
        user_id: 7,
        product_id: product,
        billing_period: "month",
        billing_interval: 1,
        amount: "30.00",
        currency: "USD",
        payment_method: "card",
        trial_end: null,
        current_period_start: expect.stringMatching(isoTime),
        cancel_at_period_end: false,
        items: [{ id: 1, product_id: null, quantity: 2, amount: "5.50" }]
      })
      expect(created.license).toMatchObject({ subscription_id: created.id, expires_at: created.current_period_end, max_activations: 3, user_id: 7 })
      expect(created.next_payment_at).toBe(created.current_period_end)
      const got = expectOk(await app.call("GET", `/subscriptions/${created.id}`))
      expect(got).toEqual(created)
      const listed = expectList(await app.call("GET", `/subscriptions?product_id=${product}`), "subscriptions", { total: 1 })
      expect(listed.map((s: any) => s.id)).toEqual([created.id])
      expect(listed[0].license).toBeUndefined()
      expectList(await app.call("GET", `/subscriptions?product_id=${product}&status=cancelled`), "subscriptions", { total: 0 })
    })

    it("with trial_days it starts in trial; JPY has no decimals; an existing license is bound by key", async () => {
      const trial = await subscribe(app, { trial_days: 14, amount: "500", currency: "JPY" })
      expect([trial.status, trial.amount]).toEqual(["trial", "500"])
      expect(Date.parse(trial.trial_end) - Date.parse(trial.current_period_start)).toBe(14 * 86_400_000)
      const license = await createLicense(app)
      const bound = await subscribe(app, { license_key: license.license_key.toLowerCase() })
      expect(bound.license_id).toBe(license.id)
      // a license already bound to a live subscription is refused
      expectInvalid(await app.call("POST", "/subscriptions", { body: { user_id: 7, billing_period: "month", billing_interval: 1, amount: "1", currency: "USD", license_key: license.license_key } }), "license_key")
    })

    it("refuses bad input with a 400 naming the field", async () => {
      const base = { user_id: 7, billing_period: "month", billing_interval: 1, amount: "30.00", currency: "USD" }
      const post = (body: Record<string, unknown>) => app.call("POST", "/subscriptions", { body: { ...base, ...body } })
      expectInvalid(await post({ amount: "30.001" }), "amount")
      expectInvalid(await post({ amount: "1.5", currency: "JPY" }), "amount")
      expectInvalid(await post({ amount: 30 }), "amount")
      expectInvalid(await post({ currency: "usd" }), "currency")
      expectInvalid(await post({ billing_interval: 0 }), "billing_interval")
      expectInvalid(await post({ billing_period: "fortnight" }), "billing_period")
      expectInvalid(await post({ surprise: 1 }), "surprise")
      expectInvalid(await post({ items: [{ amount: "1.234" }] }), "items[0].amount")
      expectError(await post({ license_key: "AAAA-BBBB-CCCC-DDDD" }), 404, "license_not_found")
    })

    it("pause suspends the license (validation refused at once), resume lifts it; forbidden moves are 409 with from and action", async () => {
      const sub = await subscribe(app)
      const key = sub.license.license_key
      expect((await validate(app, key)).code).not.toBe("license_suspended")
      const paused = expectOk(await app.call("POST", `/subscriptions/${sub.id}/pause`))
      expect([paused.status, paused.license.status]).toEqual(["on-hold", "suspended"])
      expect(paused.paused_at).toMatch(isoTime)
      expect(await validate(app, key)).toMatchObject({ valid: false, code: "license_suspended" })
      const conflict = expectError(await app.call("POST", `/subscriptions/${sub.id}/pause`), 409, "invalid_transition")
      expect(conflict).toMatchObject({ from: "on-hold", action: "pause" })
      const resumed = expectOk(await app.call("POST", `/subscriptions/${sub.id}/resume`))
      expect([resumed.status, resumed.license.status]).toEqual(["active", "inactive"])
      expect((await validate(app, key)).valid).toBe(true)
    })

    it("an administrator's suspension is not lifted by resume", async () => {
      const sub = await subscribe(app)
      expectOk(await app.call("POST", `/licenses/${sub.license.license_key}/suspend`))
      expectOk(await app.call("POST", `/subscriptions/${sub.id}/pause`))
      const resumed = expectOk(await app.call("POST", `/subscriptions/${sub.id}/resume`))
      expect([resumed.status, resumed.license.status]).toEqual(["active", "suspended"])
    })

    it("an administrator's suspend of a license the subscription suspended is not lifted by resume either (regression)", async () => {
      const sub = await subscribe(app)
      const key = sub.license.license_key
      expectOk(await app.call("POST", `/subscriptions/${sub.id}/pause`))
      // already suspended by the on-hold: the administrator's suspend takes the suspension over
      expect(expectOk(await app.call("POST", `/licenses/${key}/suspend`)).status).toBe("suspended")
      const resumed = expectOk(await app.call("POST", `/subscriptions/${sub.id}/resume`))
      expect([resumed.status, resumed.license.status]).toEqual(["active", "suspended"])
      expect(await validate(app, key)).toMatchObject({ valid: false, code: "license_suspended" })
      // the administrator's reinstate lifts it; a later on-hold is the subscription's own again
      expectOk(await app.call("POST", `/licenses/${key}/reinstate`))
      expectOk(await app.call("POST", `/subscriptions/${sub.id}/pause`))
      expect(expectOk(await app.call("POST", `/subscriptions/${sub.id}/resume`)).license.status).toBe("inactive")
    })

    it("switch prorates in the currency (net = charge − credit), may lower the seats, and is in the renewals", async () => {
      const sub = await subscribe(app, { start_date: new Date(Date.now() - 10 * 86_400_000).toISOString(), license: { max_activations: 5 } })
      const switched = expectOk(await app.call("POST", `/subscriptions/${sub.id}/switch`, { body: { amount: "60.00", max_activations: 1 } }))
      expect([switched.amount, switched.license.max_activations]).toEqual(["60.00", 1])
      const renewals = expectList(await app.call("GET", `/subscriptions/${sub.id}/renewals`), "renewals", { total: 2 })
      expect(renewals.map((r: any) => r.type)).toEqual(["signup", "switch"])
      const { credit, charge, net } = renewals[1].proration
      const cents = (s: string) => Math.round(Number(s) * 100)
      expect(cents(charge) - cents(credit)).toBe(cents(net))
      expect(cents(charge)).toBe(2 * cents(credit))
      expect(renewals[1]).toMatchObject({ amount: net, currency: "USD", status: "paid", from: { amount: "30.00" }, to: { amount: "60.00" } })
      // a new period length starts a new period now: net = new amount − credit
      const yearly = expectOk(await app.call("POST", `/subscriptions/${sub.id}/switch`, { body: { amount: "300.00", billing_period: "year" } }))
      expect(yearly.billing_period).toBe("year")
      const last = expectList(await app.call("GET", `/subscriptions/${sub.id}/renewals`), "renewals", { total: 3 })[2]
      expect(last.proration.charge).toBe("300.00")
      expectInvalid(await app.call("POST", `/subscriptions/${sub.id}/switch`, { body: { amount: "1.001" } }), "amount")
    })

    it("renew extends the period end by one period from its end and records the transaction id", async () => {
      const sub = await subscribe(app, { start_date: "2030-01-31T00:00:00Z" })
      expect(sub.current_period_end).toBe("2030-02-28T00:00:00.000Z")
      const renewed = expectOk(await app.call("POST", `/subscriptions/${sub.id}/renew`, { body: { transaction_id: "tx-42" } }))
      expect(renewed.current_period_end).toBe("2030-03-31T00:00:00.000Z")
      expect(renewed.license.expires_at).toBe("2030-03-31T00:00:00.000Z")
      const renewals = expectList(await app.call("GET", `/subscriptions/${sub.id}/renewals`), "renewals", { total: 2 })
      expect(renewals[1]).toMatchObject({ type: "early_renewal", transaction_id: "tx-42", amount: "30.00", period_end: "2030-03-31T00:00:00.000Z" })
    })

    it("cancel at the period end waits in pending-cancel; cancel now ends the license at once; then every move is 409", async () => {
      const sub = await subscribe(app, { license: { grace_days: 30 } })
      const pending = expectOk(await app.call("POST", `/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } }))
      expect([pending.status, pending.cancel_at_period_end]).toEqual(["pending-cancel", true])
      const now = expectOk(await app.call("POST", `/subscriptions/${sub.id}/cancel`, { body: {} }))
      expect(now.status).toBe("cancelled")
      expect(now.cancelled_at).toMatch(isoTime)
      // ended at the moment of the cancel (strictly after it, the next millisecond, validation refuses)
      await eventually(async () => expect(await validate(app, sub.license.license_key)).toMatchObject({ valid: false, code: "license_expired" }))
      for (const action of ["pause", "resume", "renew"]) {
        expect(expectError(await app.call("POST", `/subscriptions/${sub.id}/${action}`), 409, "invalid_transition")).toMatchObject({ from: "cancelled", action })
      }
      expectError(await app.call("PUT", `/subscriptions/${sub.id}`, { body: { payment_method: "x" } }), 409, "invalid_transition")
    })

    it("PUT changes the writable fields; unknown ids are 404 subscription_not_found on every route", async () => {
      const sub = await subscribe(app)
      const changed = expectOk(await app.call("PUT", `/subscriptions/${sub.id}`, { body: { amount: "45.50", payment_method: "sepa", items: [{ amount: "1.00" }] } }))
      expect(changed).toMatchObject({ amount: "45.50", payment_method: "sepa", items: [{ id: 1, amount: "1.00", quantity: 1, product_id: null }] })
      expectInvalid(await app.call("PUT", `/subscriptions/${sub.id}`, { body: { status: "active" } }), "status")
      for (const [method, path] of [["GET", ""], ["PUT", ""], ["POST", "/pause"], ["POST", "/resume"], ["POST", "/cancel"], ["POST", "/renew"], ["GET", "/renewals"]] as const) {
        expectError(await app.call(method, `/subscriptions/999999${path}`, method === "GET" ? {} : { body: {} }), 404, "subscription_not_found")
      }
      expectError(await app.call("POST", "/subscriptions/999999/switch", { body: { amount: "1.00" } }), 404, "subscription_not_found")
      expectError(await app.call("GET", "/subscriptions", { auth: null }), 401, "rest_unauthorized")
    })
  })
}
