/**
 * Issue 31, the console in Chromium (see support.ts): a webhook registered and its deliveries, the audit log filtered
 * by the URL, billing provider events, API keys: a read-only key sees no write controls, a revoked one returns to
 * the sign-in page; numbers follow the browser's locale.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { admin, expectNoErrors, newPage, open, publicCall, shoot, signIn, useConsole } from "./support.js"

const c = useConsole()

describe("the console in Chromium: webhooks, audit log, billing events, API keys", { timeout: 120_000 }, () => {
  /** A license whose device was activated and then revoked, beside a pool of 1,200 generated keys. */
  let key: string
  beforeAll(async () => {
    const created = await admin(c, "POST", "/licenses", { max_activations: 2, product_id: 7 })
    expect(created.status).toBe(201)
    key = created.body.data.license_key
    const activated = await publicCall(c, "/activate", { license_key: key, fingerprint: "support-desk-laptop", hostname: "laptop-42", app_version: "1.2.0" })
    expect(activated.status).toBe(201)
    expect((await admin(c, "POST", `/machines/${activated.body.data.id}/revoke`)).status).toBe(200)
    const generator = await admin(c, "POST", "/generators", { name: "Pro keys", prefix: "PRO", default_max_activations: 3 })
    expect(generator.status).toBe(201)
    expect((await admin(c, "POST", `/generators/${generator.body.data.id}/generate`, { count: 1200 })).status).toBe(201)
  }, 120_000)

  it("registers a webhook (its secret shown once), pings it and shows a delivery", async () => {
    await open(c, c.page, "/webhooks")
    await c.page.getByText("Register a webhook").click()
    await c.page.getByLabel("Name", { exact: true }).fill("CRM")
    await c.page.getByLabel("URL", { exact: true }).fill(c.receiver.url)
    await c.page.getByRole("button", { name: "Register" }).click()
    const secret = await c.page.locator(".secret-value").textContent()
    expect(secret).toMatch(/^whsec_/)
    await c.page.getByRole("button", { name: "Done" }).click()
    await c.page.getByRole("heading", { name: /CRM/ }).waitFor()
    await c.page.getByRole("button", { name: "Ping" }).click()
    await c.page.getByText(/^Delivered: HTTP 200/).waitFor()

    // An event after registration is delivered, and shows in the log.
    expect((await admin(c, "POST", `/licenses/${key}/suspend`)).status).toBe(200)
    await eventually(async () => {
      await c.page.getByRole("button", { name: "Refresh" }).click()
      await c.page.locator("[aria-busy=true]").waitFor({ state: "detached" })
      const row = c.page.getByRole("row").filter({ hasText: "license.suspended" })
      expect(await row.locator(".badge-delivered").count()).toBe(1)
    }, { timeout: 30_000, interval: 500 })
    expect(c.receiver.received.some((r) => r.body?.type === "license.suspended")).toBe(true)
    await c.page.getByRole("row").filter({ hasText: "license.suspended" }).getByRole("button", { name: "Redeliver" }).click()
    await shoot(c.page, "webhook")
    await open(c, c.page, "/webhooks")
    await shoot(c.page, "webhooks")
  })

  it("shows the audit log of those writes, its filters kept in the URL", async () => {
    await open(c, c.page, "/audit-log?action=license.suspend")
    await c.page.getByRole("row").filter({ hasText: "license.suspend" }).first().waitFor()
    expect(await c.page.getByRole("row").filter({ hasText: "license.create" }).count()).toBe(0)
    await c.page.getByLabel("Action").fill("generator.generate")
    await c.page.getByRole("button", { name: "Filter" }).click()
    await c.page.waitForURL(/action=generator\.generate/)
    await c.page.getByRole("row").filter({ hasText: "generator.generate" }).first().waitFor()
    await shoot(c.page, "audit-log")
  })

  it("lists the billing provider events with their outcome, filtered by outcome", async () => {
    const linked = await admin(c, "POST", "/subscriptions", {
      user_id: 44, billing_period: "month", billing_interval: 1, amount: "19.00", currency: "USD", billing_provider: "stripe", external_id: "sub_console"
    })
    expect(linked.status).toBe(201)
    const target = { externalId: "sub_console", lmId: null, amount: 1900, days: 30, currency: "USD" }
    const now = Math.floor(Date.now() / 1000) * 1000
    const deliveries = [
      c.stripe.paid(target, { at: now, start: now, end: now + 30 * 86_400_000 }),
      c.stripe.paused({ ...target, externalId: "sub_nobody" }, { at: now })
    ]
    for (const delivery of deliveries) {
      const response = await fetch(`${c.apiBase}/billing/stripe/events`, { method: "POST", headers: delivery.headers, body: delivery.body })
      expect(response.status).toBe(200)
    }
    await open(c, c.page, "/billing-events")
    const rows = c.page.getByRole("row")
    await rows.filter({ hasText: "invoice.paid" }).filter({ hasText: "applied" }).waitFor()
    await rows.filter({ hasText: "sub_nobody" }).filter({ hasText: "unmatched" }).waitFor()
    await shoot(c.page, "billing-events")
    await c.page.getByLabel("Outcome").selectOption("unmatched")
    await c.page.getByRole("button", { name: "Filter" }).click()
    await c.page.waitForURL(/outcome=unmatched/)
    await c.page.locator("[aria-busy=true]").waitFor({ state: "detached" })
    expect(await rows.filter({ hasText: "invoice.paid" }).count()).toBe(0)
    await rows.filter({ hasText: "sub_nobody" }).waitFor()
    // the applied event's subscription is one click away
    await open(c, c.page, "/billing-events?outcome=applied")
    await c.page.getByRole("link", { name: `#${linked.body.data.id}` }).click()
    await c.page.getByRole("heading", { name: new RegExp(`#${linked.body.data.id}`) }).waitFor()
  })

  let readKey: { id: number; consumerKey: string; consumerSecret: string }
  it("issues a read-only key (secret shown once), which sees no write controls", async () => {
    await open(c, c.page, "/api-keys")
    await c.page.getByText("New API key").click()
    await c.page.getByLabel("What it is for").fill("support desk, read only")
    await c.page.getByRole("button", { name: "Issue key" }).click()
    const consumerKey = (await c.page.locator(".secret-value[data-name='Consumer key']").textContent())!
    const consumerSecret = (await c.page.locator(".secret-value[data-name='Consumer secret']").textContent())!
    await shoot(c.page, "api-keys")
    await c.page.getByRole("button", { name: "Done" }).click()
    expect(await c.page.locator(".secret-value").count()).toBe(0)
    const listed = await admin(c, "GET", "/api-keys")
    readKey = { id: listed.body.data.api_keys.find((k: { description: string }) => k.description === "support desk, read only").id, consumerKey, consumerSecret }

    // In a German browser: numbers and dates in its locale.
    const reader = await newPage(c, "read-only", "de-DE")
    try {
      await signIn(c, reader.page, readKey)
      await reader.page.locator(".dashboard[data-loaded=true]").waitFor()
      expect(await reader.page.locator("[data-tile=licenses] .tile-value").textContent()).toMatch(/^1\.2\d\d$/)
      expect(await reader.page.locator("[data-scope]").textContent()).toBe("read only")
      expect(await reader.page.getByRole("link", { name: "API keys" }).count()).toBe(0)
      const writeLabels = /^(New license|New generator|New policy|Apply to its licenses|New subscription|Publish a release|Register a webhook|New API key|Suspend|Revoke|Reinstate|Terminate|Delete|Remove|Renew|Edit settings|Generate|Pause|Resume|Cancel now|Ping|Redeliver|Disable|Enable)$/
      for (const path of ["/", "/licenses", `/licenses/${key}`, "/generators", "/policies", "/subscriptions", "/billing-events", "/releases", "/webhooks", "/webhooks/1"]) {
        await open(c, reader.page, path)
        expect(await reader.page.getByRole("button", { name: writeLabels }).count(), path).toBe(0)
        expect(await reader.page.locator("details.disclosure").count(), path).toBe(0)
      }
      // The read-only key still reads: the license and its revoked machine are there.
      await open(c, reader.page, `/licenses/${key}`)
      await reader.page.getByText("support-desk-laptop").waitFor()

      // Revoked by an administrator: the next call returns to the sign-in page, which says why.
      expect((await admin(c, "DELETE", `/api-keys/${readKey.id}`)).status).toBe(200)
      await reader.page.getByRole("link", { name: "Licenses" }).click()
      await reader.page.getByText("The server did not accept this key any more").waitFor()
      expect(await reader.page.evaluate(() => sessionStorage.length)).toBe(0)
    } finally {
      await reader.context.close()
    }
  })

  it("logged no error on any page, and the server none either", () => expectNoErrors(c))
})
