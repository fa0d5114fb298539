/**
 * Every event kind of CONTRACT §11 (and `webhook.disabled`) arrives (issue 16): one row per kind, caused the way a
 * user causes it (a route, the sweep, the subscriptions' period-end job, a declined payment, a day of failures),
 * delivered to a real node:http receiver on loopback, signed (checked with node:crypto), with the data that names
 * what changed. On the memory store, PGlite and, when DATABASE_URL names a server, PostgreSQL. `webhook.ping`
 * (sent at once, never queued) and re-enabling a disabled webhook are tested in webhooks.test.ts;
 * `anomaly.detected` with the background anomaly detection.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Model, Ports, Services } from "@lm/domain"
import { startApp, type TestApp, type TestStore } from "./support/App.js"
import { activate, createLicense, expectOk, isoTime } from "./support/Management.js"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { arrival, type Received, type Receiver, startReceiver, verifySignature } from "../../../test/support/receiver.js"
import { serviceUrl } from "../../../test/support/services.js"

const DAY = 86_400_000

const subscribe = async (app: TestApp, body: Record<string, unknown> = {}) =>
  expectOk(await app.call("POST", "/subscriptions", {
    body: { user_id: 7, billing_period: "month", billing_interval: 1, amount: "30.00", currency: "USD", ...body }
  }), 201)

const licenseAction = (action: "suspend" | "revoke" | "terminate") => async (app: TestApp) => {
  const key = (await createLicense(app, {})).license_key
  expectOk(await app.call("POST", `/licenses/${key}/${action}`, { body: action === "terminate" ? { confirm: true } : {} }))
  return { license_key: key }
}

/** A subscription moved by a route; the event names it, its status after and the move. */
const subscriptionMove = (route: string, body: unknown, expected: Record<string, unknown>) => async (app: TestApp) => {
  const sub = await subscribe(app)
  if (route === "pause then resume") {
    expectOk(await app.call("POST", `/subscriptions/${sub.id}/pause`))
    expectOk(await app.call("POST", `/subscriptions/${sub.id}/resume`))
  } else expectOk(await app.call(route === "update" ? "PUT" : "POST", route === "update" ? `/subscriptions/${sub.id}` : `/subscriptions/${sub.id}/${route}`, { body }))
  return { subscription_id: sub.id, ...expected }
}

/**
 * Each row: the event type, how it is caused, and the cause itself, answering the data the delivery must carry (a subset of it, which
 * also tells this row's delivery from others of the same type).
 */
const kinds: ReadonlyArray<readonly [string, string, (app: TestApp) => Promise<Record<string, unknown>>]> = [
  ["license.created", "POST /licenses", async (app) => ({ license_key: (await createLicense(app, {})).license_key })],
  ["license.updated", "PUT /licenses/{key}", async (app) => {
    const key = (await createLicense(app, {})).license_key
    expectOk(await app.call("PUT", `/licenses/${key}`, { body: { max_activations: 7 } }))
    return { license_key: key }
  }],
  ["license.deleted", "DELETE /licenses/{key}", async (app) => {
    const key = (await createLicense(app, {})).license_key
    expectOk(await app.call("DELETE", `/licenses/${key}`))
    return { license_key: key }
  }],
  ["license.renewed", "POST renew", async (app) => {
    const key = (await createLicense(app, {})).license_key
    expectOk(await app.call("POST", `/licenses/${key}/renew`, { body: { days: 30 } }))
    return { license_key: key }
  }],
  ["license.suspended", "POST suspend", licenseAction("suspend")],
  ["license.revoked", "POST revoke", licenseAction("revoke")],
  ["license.terminated", "POST terminate", licenseAction("terminate")],
  ["license.reinstated", "POST reinstate", async (app) => {
    const key = (await createLicense(app, {})).license_key
    expectOk(await app.call("POST", `/licenses/${key}/suspend`))
    expectOk(await app.call("POST", `/licenses/${key}/reinstate`))
    return { license_key: key }
  }],
  // A subscription cancelled now ends its license at once.
  ["license.expired", "its subscription cancelled now", async (app) => {
    const sub = await subscribe(app)
    expectOk(await app.call("POST", `/subscriptions/${sub.id}/cancel`, { body: {} }))
    return { license_key: sub.license.license_key, subscription_id: sub.id }
  }],
  ["machine.activated", "POST /activate", async (app) => {
    const key = (await createLicense(app, {})).license_key
    await activate(app, key, "kind-fp")
    return { license_key: key, fingerprint: "kind-fp" }
  }],
  ["machine.deactivated", "POST /deactivate", async (app) => {
    const key = (await createLicense(app, {})).license_key
    await activate(app, key, "kind-fp")
    expectOk(await app.call("POST", "/deactivate", { body: { license_key: key, fingerprint: "kind-fp" }, auth: null }))
    return { license_key: key, fingerprint: "kind-fp" }
  }],
  ["machine.revoked", "POST /machines/{id}/revoke", async (app) => {
    const key = (await createLicense(app, {})).license_key
    const machine = await activate(app, key, "kind-fp")
    expectOk(await app.call("POST", `/machines/${machine.id}/revoke`))
    return { license_key: key, fingerprint: "kind-fp" }
  }],
  // The sweep frees a floating seat whose lease ran out, and culls a machine whose heartbeat died.
  ["machine.lease_expired", "the sweep", async (app) => {
    const key = (await createLicense(app, { is_floating: true, lease_duration: 1 })).license_key
    await activate(app, key, "kind-fp")
    return { license_key: key, fingerprint: "kind-fp" }
  }],
  ["machine.culled", "the sweep", async (app) => {
    const key = (await createLicense(app, { require_heartbeat: true, heartbeat_interval: 1 })).license_key
    await activate(app, key, "kind-fp")
    return { license_key: key, fingerprint: "kind-fp" }
  }],
  ["generator.keys_generated", "POST generate", async (app) => {
    const generator = expectOk(await app.call("POST", "/generators", { body: { name: "kinds" } }), 201)
    expect((await app.call("POST", `/generators/${generator.id}/generate`, { body: { count: 2 } })).status).toBe(201)
    return { generator_id: generator.id, count: 2 }
  }],
  ["policy.created", "POST /policies", async (app) => {
    const policy = expectOk(await app.call("POST", "/policies", { body: { name: "kinds", entitlements: ["export"] } }), 201)
    return { policy_id: policy.id, name: "kinds", entitlements: ["export"] }
  }],
  ["policy.updated", "PUT /policies/{id}", async (app) => {
    const policy = expectOk(await app.call("POST", "/policies", { body: { name: "kinds-up" } }), 201)
    expectOk(await app.call("PUT", `/policies/${policy.id}`, { body: { entitlements: ["sync"] } }))
    return { policy_id: policy.id, entitlements: ["sync"] }
  }],
  ["policy.deleted", "DELETE /policies/{id}", async (app) => {
    const policy = expectOk(await app.call("POST", "/policies", { body: { name: "kinds-del" } }), 201)
    expectOk(await app.call("DELETE", `/policies/${policy.id}`))
    return { policy_id: policy.id, name: "kinds-del" }
  }],
  ["release.published", "POST /releases", async (app) => {
    const product = 900_000 + Math.floor(Math.random() * 99_999)
    const release = expectOk(await app.call("POST", "/releases", {
      body: { product_id: product, version: "2.1.0", channel: "beta", artifact_url: "https://cdn.example.com/app-2.1.0.zip" }
    }), 201)
    return { release_id: release.id, product_id: product, version: "2.1.0", channel: "beta" }
  }],
  ["release.deleted", "DELETE /releases/{id}", async (app) => {
    const product = 900_000 + Math.floor(Math.random() * 99_999)
    const release = expectOk(await app.call("POST", "/releases", {
      body: { product_id: product, version: "2.2.0", artifact_url: "https://cdn.example.com/app-2.2.0.zip" }
    }), 201)
    expect(expectOk(await app.call("DELETE", `/releases/${release.id}`))).toEqual({ deleted: true, id: release.id })
    return { release_id: release.id, product_id: product, version: "2.2.0", channel: "stable" }
  }],
  // A webhook whose attempts have failed for a day (its receiver refuses connections) fails once more.
  ["webhook.disabled", "a day of failed deliveries", async (app) => {
    const dead = expectOk(await app.call("POST", "/webhooks", { body: { name: "dead", url: "http://127.0.0.1:1/hook", events: ["license.created"] } }), 201)
    await app.run(Effect.flatMap(Effect.service(Ports.WebhookRepository), (repo) =>
      Effect.flatMap(repo.findById(dead.id), (w) => repo.update({ ...w!, failingSince: Date.now() - DAY - 1_000 }))))
    await createLicense(app, {})
    return { webhook: { id: dead.id, name: "dead", url: dead.url, events: ["license.created"], status: "disabled", created_at: dead.created_at } }
  }],
  ["subscription.created", "POST /subscriptions", async (app) => {
    const sub = await subscribe(app)
    return { subscription_id: sub.id, status: "active", license_id: sub.license_id }
  }],
  ["subscription.updated", "PUT /subscriptions/{id}", subscriptionMove("update", { amount: "45.50" }, { status: "active", action: "update", fields: ["amount"] })],
  ["subscription.paused", "POST pause", subscriptionMove("pause", {}, { status: "on-hold", from: "active", action: "pause" })],
  ["subscription.resumed", "POST resume", subscriptionMove("pause then resume", {}, { status: "active", from: "on-hold", action: "resume" })],
  ["subscription.cancelled", "POST cancel at the period end", subscriptionMove("cancel", { at_period_end: true }, { status: "pending-cancel", from: "active", at_period_end: true })],
  ["subscription.switched", "POST switch", subscriptionMove("switch", { amount: "60.00" }, { status: "active", action: "switch" })],
  ["subscription.renewed", "POST renew", subscriptionMove("renew", { transaction_id: "tx-kinds" }, { status: "active", action: "renew", renewal_type: "early_renewal" })],
  // The payment gateway declines a renewal (an embedder's gateway; the bundled one records every reported payment as paid).
  ["subscription.payment_failed", "the payment gateway declines", async (app) => {
    const sub = await subscribe(app)
    await app.run(Effect.flatMap(Effect.service(Services.Subscriptions), (subs) => subs.renew(sub.id, null)).pipe(
      Effect.provideService(Ports.PaymentGateway, { collect: () => Effect.succeed({ status: "failed" as const, transactionId: "declined-1" }) })
    ))
    return { subscription_id: sub.id, status: "active", transaction_id: "declined-1" }
  }],
  // The period-end job puts a subscription unpaid past its grace days on hold...
  ["subscription.payment_failed", "the period-end job, grace days over", async (app) => {
    const sub = await subscribe(app, { start_date: new Date(Date.now() - 40 * DAY).toISOString() })
    return { subscription_id: sub.id, status: "on-hold", action: "payment_failed" }
  }],
  // ... and ends one whose end date has passed.
  ["subscription.expired", "the period-end job, end date passed", async (app) => {
    const sub = await subscribe(app, { start_date: new Date(Date.now() - 2 * DAY).toISOString(), end_date: new Date(Date.now() - DAY).toISOString() })
    return { subscription_id: sub.id, status: "expired", action: "end_date" }
  }]
]

/** Whether `data` holds every field of `expected` with an equal value. */
const carries = (data: unknown, expected: Record<string, unknown>) => {
  try {
    expect(data).toMatchObject(expected)
    return true
  } catch {
    return false
  }
}

/** Kinds tested elsewhere: `anomaly.detected` with the background anomaly detection. */
const testedElsewhere = new Set(["anomaly.detected"])

it("the table has a row for every event kind the service writes", () => {
  expect(new Set(kinds.map(([type]) => type))).toEqual(new Set(Model.eventTypes.filter((type) => !testedElsewhere.has(type))))
})

/** PostgreSQL joins the stores when DATABASE_URL names a server (CI sets it), on a database of its own. */
const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Array<TestStore | "postgres"> = ["memory", "pglite", ...(postgresUrl === "" ? [] : ["postgres" as const])]

for (const store of stores) {
  describe(`every event kind arrives (${store})`, () => {
    let app: TestApp
    let all: Receiver
    let named: Receiver
    let allHook: any
    let namedHook: any
    beforeAll(async () => {
      all = await startReceiver()
      named = await startReceiver()
      app = await startApp(store === "postgres" ? "memory" : store, {
        // No job runs by itself: each test runs them once (`runJobs`) after its cause, instead of waiting for them.
        webhooks: { allowInsecure: true, allowPrivate: true, retrySchedule: [0, 0], pollMillis: 0 },
        ...(store === "postgres" ? { storeLayer: freshPostgresStore(postgresUrl) } : {})
      })
      const register = async (url: string, events: ReadonlyArray<string>) =>
        expectOk(await app.call("POST", "/webhooks", { body: { name: "kinds", url, events } }), 201)
      allHook = await register(all.url, ["*"])
      // The same kinds subscribed to by name: each name of the list is one a webhook can ask for.
      namedHook = await register(named.url, [...new Set(kinds.map(([type]) => type))])
    }, 120_000)
    afterAll(async () => {
      await app?.close()
      await all?.close()
      await named?.close()
    })

    it.each(kinds)("%s (%s) arrives, signed, with its data", async (type, _how, cause) => {
      const expected = await cause(app)
      // A minute ahead for the sweep: the lease and the heartbeat of a second are over.
      await app.runJobs({ aheadMillis: 60_000 })
      const mine = (r: Received) => carries(r.body.data, expected)
      const request = await arrival(all, type, mine)
      expect(request.body).toEqual({ id: expect.any(Number), type, created_at: expect.stringMatching(isoTime), data: expect.objectContaining(expected) })
      expect(request.headers["x-lm-event"]).toBe(type)
      expect(verifySignature(request, allHook.secret)).toBe(true)
      const byName = await arrival(named, type, mine)
      expect(byName.body.id).toBe(request.body.id)
      expect(verifySignature(byName, namedHook.secret)).toBe(true)
    }, 60_000)
  })
}
