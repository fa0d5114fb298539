/**
 * Receiving billing provider events (CONTRACT §20) over real HTTP, on the memory store and PGlite: a provider is
 * on only with its secret; a tampered body, a wrong secret or a stale signature is 400 `billing_signature_invalid`
 * and changes nothing; the same event twice is applied once (`duplicate`); an event older than the last applied
 * one is `stale`; an unknown subscription is `unmatched`; a move the state machine refuses is `ignored`; all 200.
 * `GET /billing/events` lists them newest first with their outcome. `external_id` is unique per provider.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"
import { deliver, kits, post, secretsOf, type Target } from "./support/BillingProviders.js"
import { expectError, expectInvalid, expectList, expectOk } from "./support/Management.js"

const DAY = 86_400_000
let serial = 0

for (const store of ["memory", "pglite"] as const) {
  describe(`billing provider events on ${store}`, () => {
    const all = kits()
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store, { subscriptionJobIntervalSeconds: 0, settings: { billingSecrets: secretsOf(all) } })
    }, 120_000)
    afterAll(async () => {
      await app?.close()
    })

    /** A subscription here, and its provider subscription (linked by POST's `billing_provider` and `external_id`). */
    const subscribed = async (provider: string): Promise<{ id: number; target: Target; licenseKey: string }> => {
      const externalId = provider === "lemonsqueezy" ? String(700_000 + ++serial) : `sub_ev${++serial}`
      const created = expectOk(await app.call("POST", "/subscriptions", {
        body: { user_id: 9, billing_period: "day", billing_interval: 30, amount: "30.00", currency: "USD", billing_provider: provider, external_id: externalId }
      }), 201)
      expect([created.billing_provider, created.external_id]).toEqual([provider, externalId])
      return { id: created.id, target: { externalId, lmId: null, amount: 3000, days: 30, currency: "USD" }, licenseKey: created.license.license_key }
    }
    const getSubscription = async (id: number) => expectOk(await app.call("GET", `/subscriptions/${id}`))

    it("a provider without its secret, or an unknown one, is 404 rest_no_route", async () => {
      const paddle = all.find((k) => k.provider === "paddle")!
      const delivery = paddle.created({ externalId: "sub_x", lmId: null, amount: 1, days: 30, currency: "USD" }, { at: Date.now() })
      expectError(await post(app, "braintree", delivery), 404, "rest_no_route")
      // Paddle's secret unset: its endpoint is off
      const without = await startApp("memory", { settings: { billingSecrets: secretsOf(all.filter((k) => k.provider !== "paddle")) } })
      try {
        expectError(await post(without, "paddle", delivery), 404, "rest_no_route")
      } finally {
        await without.close()
      }
    })

    for (const kit of all) {
      it(`${kit.provider}: a tampered body, a wrong secret or a stale signature is 400 billing_signature_invalid and changes nothing`, async () => {
        const { id, target } = await subscribed(kit.provider)
        const before = await getSubscription(id)
        const now = Math.floor(Date.now() / 1000) * 1000
        const paid = kit.paid(target, { at: now - DAY, start: now - DAY, end: now + 29 * DAY })
        const tampered = { ...paid, body: paid.body.replace("3000", "3001") }
        expect(tampered.body).not.toBe(paid.body)
        const refusals = [
          await post(app, kit.provider, tampered),
          await post(app, kit.provider, kit.paid(target, { at: now - DAY, start: now - DAY, end: now + 29 * DAY, secret: "not-the-secret" })),
          await post(app, kit.provider, { ...paid, headers: { "content-type": "application/json" } })
        ]
        // a signature too old: Stripe's tolerance is 300 s, Paddle's library allows 5 s; Lemon Squeezy's has no time
        const tooOld = { stripe: 301_000, paddle: 10_000, lemonsqueezy: undefined }[kit.provider]
        if (tooOld !== undefined) {
          refusals.push(await post(app, kit.provider, kit.paid(target, { at: now - DAY, start: now - DAY, end: now + 29 * DAY, signedAt: Date.now() - tooOld })))
        }
        for (const refused of refusals) expectError(refused, 400, "billing_signature_invalid")
        expect(await getSubscription(id)).toEqual(before)
        expect(await deliver(app, kit.provider, paid)).toBe("applied")
        expect((await getSubscription(id)).current_period_end).toBe(new Date(now + 29 * DAY).toISOString())
      })

      it(`${kit.provider}: the same event twice is applied once; an older event after a newer one is stale`, async () => {
        const { id, target } = await subscribed(kit.provider)
        const now = Math.floor(Date.now() / 1000) * 1000
        const newer = kit.paid(target, { at: now - 2 * DAY, start: now - 2 * DAY, end: now + 28 * DAY })
        expect(await deliver(app, kit.provider, newer)).toBe("applied")
        expect(await deliver(app, kit.provider, newer)).toBe("duplicate")
        expect(await deliver(app, kit.provider, kit.paused(target, { at: now - 10 * DAY }))).toBe("stale")
        const after = await getSubscription(id)
        expect([after.status, after.current_period_end]).toEqual(["active", new Date(now + 28 * DAY).toISOString()])
        const renewals = expectList(await app.call("GET", `/subscriptions/${id}/renewals`), "renewals", { total: 2 })
        expect(renewals.map((r: any) => r.type)).toEqual(["signup", "renewal"])
        const page = await app.call("GET", `/billing/events?provider=${kit.provider}&per_page=3`)
        expect(page.status).toBe(200)
        const listed = page.body.data.events
        expect(listed.map((e: any) => e.outcome)).toEqual(["stale", "duplicate", "applied"])
        expect(listed[1]).toMatchObject({ provider: kit.provider, external_id: target.externalId, subscription_id: id, received_at: expect.any(String) })
        expect(listed[1].id).toBe(listed[2].id)
      })

      it(`${kit.provider}: pause and resume; a move the state machine refuses is ignored; an unknown subscription is unmatched`, async () => {
        const { id, target, licenseKey } = await subscribed(kit.provider)
        const now = Date.now()
        expect(await deliver(app, kit.provider, kit.paused(target, { at: now - 3 * DAY }))).toBe("applied")
        expect((await getSubscription(id)).status).toBe("on-hold")
        const validate = async () => expectOk(await app.call("POST", "/validate", { body: { license_key: licenseKey }, auth: null })).code
        expect(await validate()).toBe("license_suspended")
        // paused twice: the machine refuses to pause an on-hold subscription
        expect(await deliver(app, kit.provider, kit.paused(target, { at: now - 2 * DAY }))).toBe("ignored")
        expect(await deliver(app, kit.provider, kit.resumed(target, { at: now - DAY }))).toBe("applied")
        expect([(await getSubscription(id)).status, await validate()]).toEqual(["active", "valid"])
        expect(await deliver(app, kit.provider, kit.paused({ ...target, externalId: kit.provider === "lemonsqueezy" ? "1" : "sub_unknown" }, { at: now }))).toBe("unmatched")
        const unmatched = expectList(await app.call("GET", `/billing/events?outcome=unmatched&provider=${kit.provider}`), "events", { total: 1 })
        expect(unmatched[0]).toMatchObject({ outcome: "unmatched", subscription_id: null })
        const ignored = expectList(await app.call("GET", `/billing/events?outcome=ignored&provider=${kit.provider}`), "events", { total: 1 })
        expect(ignored[0].subscription_id).toBe(id)
      })
    }

    it("external_id is unique per provider (409 subscription_exists), needs a provider, and is refused for an unknown provider", async () => {
      const { id } = await subscribed("stripe")
      const taken = (await getSubscription(id)).external_id
      const body = { user_id: 9, billing_period: "month", billing_interval: 1, amount: "1.00", currency: "USD" }
      expectError(await app.call("POST", "/subscriptions", { body: { ...body, billing_provider: "stripe", external_id: taken } }), 409, "subscription_exists")
      const other = expectOk(await app.call("POST", "/subscriptions", { body: { ...body, billing_provider: "paddle", external_id: taken } }), 201)
      expectError(await app.call("PUT", `/subscriptions/${other.id}`, { body: { billing_provider: "stripe" } }), 409, "subscription_exists")
      expectInvalid(await app.call("POST", "/subscriptions", { body: { ...body, external_id: "sub_lonely" } }), "billing_provider")
      expectInvalid(await app.call("POST", "/subscriptions", { body: { ...body, billing_provider: "braintree", external_id: "x" } }), "billing_provider")
      const unlinked = expectOk(await app.call("PUT", `/subscriptions/${other.id}`, { body: { billing_provider: null, external_id: null } }))
      expect([unlinked.billing_provider, unlinked.external_id]).toEqual([null, null])
    })

    it("GET /billing/events needs an API key and refuses a bad outcome", async () => {
      expectError(await app.call("GET", "/billing/events", { auth: null }), 401, "rest_unauthorized")
      expectInvalid(await app.call("GET", "/billing/events?outcome=lost"), "outcome")
    })
  })
}
