/**
 * A subscription's whole life driven by each billing provider (CONTRACT §20, issue 33), over real HTTP with the
 * providers' own payload shapes and signatures, on the memory store, PGlite and PostgreSQL (DATABASE_URL): the
 * provider subscription created (linked by `lm_subscription_id`), three paid periods with the license expiring at
 * each one's end, a failed payment and on-hold once the grace days have passed (the period ends are explicit, in
 * the past, and the period-end job is run on demand), paid again → active, a plan change, cancel at the period end
 * → pending-cancel, then cancelled when the provider ends it.
 */
import { Effect } from "effect"
import { Subscriptions } from "@lm/domain"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { startApp, type TestApp } from "./support/App.js"
import { type Delivery, deliver, kits, type ProviderKit, secretsOf, type Target } from "./support/BillingProviders.js"
import { expectList, expectOk } from "./support/Management.js"
import { serviceUrl } from "../../../test/support/services.js"

const DAY = 86_400_000
const iso = (ms: number) => new Date(ms).toISOString()
const url = serviceUrl("DATABASE_URL")

/** A provider subscription id of the provider's own form. */
const externalIdOf = (provider: string, n: number) =>
  provider === "lemonsqueezy" ? String(900_000 + n) : provider === "paddle" ? `sub_01hv8y5ehszzq0yv20ttx3166${n}` : `sub_1QsFmpLkdIwHu7ix${n}`

const stores = [
  { name: "memory", start: (all: ReadonlyArray<ProviderKit>) => startApp("memory", { subscriptionJobIntervalSeconds: 0, settings: { billingSecrets: secretsOf(all) } }) },
  { name: "pglite", start: (all: ReadonlyArray<ProviderKit>) => startApp("pglite", { subscriptionJobIntervalSeconds: 0, settings: { billingSecrets: secretsOf(all) } }) },
  ...(url === ""
    ? []
    : [{
      name: "postgres",
      start: (all: ReadonlyArray<ProviderKit>) =>
        startApp("pglite", { storeLayer: freshPostgresStore(url), subscriptionJobIntervalSeconds: 0, settings: { billingSecrets: secretsOf(all) } })
    }])
]

for (const store of stores) {
  describe(`a subscription's life driven by its billing provider, on ${store.name}`, () => {
    const all = kits()
    let app: TestApp
    beforeAll(async () => {
      app = await store.start(all)
    }, 120_000)
    afterAll(async () => {
      await app?.close()
    })

    all.forEach((kit, n) => {
      it(`${kit.provider}: created, paid ×3, failed → on-hold after grace, paid → active, plan change, cancel at period end, cancelled`, async () => {
        // whole seconds: Stripe's timestamps are Unix seconds
        const now = Math.floor(Date.now() / 1000) * 1000
        const created = expectOk(await app.call("POST", "/subscriptions", {
          body: { user_id: 40 + n, billing_period: "day", billing_interval: 30, amount: "30.00", currency: "USD" }
        }), 201)
        const target: Target = { externalId: externalIdOf(kit.provider, n), lmId: created.id, amount: 3000, days: 30, currency: "USD" }
        const get = async () => expectOk(await app.call("GET", `/subscriptions/${created.id}`))
        const send = (delivery: Delivery) => deliver(app, kit.provider, delivery)
        const validate = async () =>
          expectOk(await app.call("POST", "/validate", { body: { license_key: created.license.license_key }, auth: null })).code as string

        expect(await send(kit.created(target, { at: now - 130 * DAY }))).toBe("applied")
        expect(await get()).toMatchObject({ billing_provider: kit.provider, external_id: target.externalId, status: "active" })

        for (const [start, end] of [[now - 120 * DAY, now - 90 * DAY], [now - 90 * DAY, now - 60 * DAY], [now - 60 * DAY, now - 30 * DAY]] as const) {
          expect(await send(kit.paid(target, { at: start, start, end }))).toBe("applied")
          const paid = await get()
          expect(paid).toMatchObject({ status: "active", current_period_start: iso(start), current_period_end: iso(end), next_payment_at: iso(end) })
          expect(paid.license.expires_at).toBe(iso(end))
        }

        expect(await send(kit.paymentFailed(target, { at: now - 29 * DAY }))).toBe("applied")
        expect((await get()).status).toBe("active")
        // the grace days after the unpaid period end (30 days ago) are over: the period-end job puts it on hold
        await app.run(Effect.gen(function*() {
          return yield* (yield* Subscriptions).runDue
        }))
        const held = await get()
        expect([held.status, held.license.status, await validate()]).toEqual(["on-hold", "suspended", "license_suspended"])

        const p4 = [now - 5 * DAY, now + 25 * DAY] as const
        expect(await send(kit.paid(target, { at: p4[0], start: p4[0], end: p4[1] }))).toBe("applied")
        const active = await get()
        expect([active.status, active.license.expires_at, await validate()]).toEqual(["active", iso(p4[1]), "valid"])

        expect(await send(kit.planChanged({ ...target, amount: 4500 }, { at: now - 4 * DAY }))).toBe("applied")
        expect((await get()).amount).toBe(kit.planChangeHasAmount ? "45.00" : "30.00")

        expect(await send(kit.cancelAtPeriodEnd(target, { at: now - 3 * DAY }))).toBe("applied")
        expect(await get()).toMatchObject({ status: "pending-cancel", cancel_at_period_end: true, current_period_end: iso(p4[1]) })

        // the provider ends it at the period end
        expect(await send(kit.cancelled(target, { at: p4[1] }))).toBe("applied")
        const ended = await get()
        expect(ended.status).toBe("cancelled")
        expect(Date.parse(ended.license.expires_at)).toBeLessThanOrEqual(Date.now())
        expect(await validate()).toBe("license_expired")

        // the failed payment and the clock's on-hold each record a failed renewal; a switch records the plans
        const expected = ["signup:paid", "renewal:paid", "renewal:paid", "renewal:paid", "renewal:failed", "renewal:failed", "renewal:paid"]
          .concat(kit.planChangeHasAmount ? ["switch:paid"] : [])
        const renewals = expectList(await app.call("GET", `/subscriptions/${created.id}/renewals?per_page=20`), "renewals", { total: expected.length })
        expect(renewals.map((r: any) => `${r.type}:${r.status}`)).toEqual(expected)
        const events = expectList(await app.call("GET", `/billing/events?provider=${kit.provider}`), "events", { total: 9 })
        expect(events.every((e: any) => e.outcome === "applied" && e.subscription_id === created.id && e.external_id === target.externalId)).toBe(true)
      }, 60_000)
    })
  })
}
