/**
 * Issue 31: the console in a real browser (Debian's Chromium, driven by playwright-core) against a real `lm serve`
 * on PGlite, spawned as a process with the console built fresh from its sources. What a vendor's support person
 * does: sign in (with the keyboard too), create a license, find the device a client activated through the public
 * API, revoke the device, suspend the license and see the revocation list change, upload a release, see it
 * listed and delete one (its version typed to confirm), register a webhook and see a delivery, see the dashboard
 * chart draw validations, read the audit log filtered by the URL; a read-only key sees no write controls; a revoked
 * key returns to the sign-in page; numbers follow the browser's locale; the Content-Security-Policy is enforced and
 * no page logs an error. Every page is photographed at 1280 and 390 px into
 * test/console/screenshots/ (not committed; the README shows two copies from docs/console/).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildConsole, type ConsoleBuild, maxGzipBytes } from "../../apps/console/build.ts"
import { adminKey } from "../../packages/http/test/support/App.js"
import { stripeKit } from "../../packages/http/test/support/BillingProviders.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { launchChromium } from "../client/support/browser.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "../http/support/Child.js"
import { eventually } from "../support/eventually.js"
import { type Receiver, startReceiver } from "../support/receiver.js"

const screenshots = fileURLToPath(new URL("./screenshots/", import.meta.url))
const stripe = stripeKit()

let work: string
let built: ConsoleBuild
let server: ServerProcess
let origin: string
let apiBase: string
let receiver: Receiver
let browser: Browser
let context: BrowserContext
let page: Page
/** Errors any console page logged (CSP violations show here too), by page. */
const errors: Array<string> = []

/** A management call as the administrator (the test's own set-up, not the console's). */
const admin = async (method: string, route: string, body?: unknown) => {
  const response = await fetch(`${apiBase}${route}`, {
    method,
    headers: { authorization: basic(adminKey.consumerKey, adminKey.consumerSecret), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: await response.json() as any }
}

/** A public client call, as licensed software makes it. */
const publicCall = async (route: string, body: unknown) => {
  const response = await fetch(`${apiBase}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  return { status: response.status, body: await response.json() as any }
}

const watch = (target: Page, label: string) => {
  target.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") errors.push(`${label}: ${message.type()}: ${message.text()}`)
  })
  target.on("pageerror", (error) => errors.push(`${label}: ${error.message}`))
}

const newPage = async (label: string, locale = "en-US") => {
  const c = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale })
  const p = await c.newPage()
  watch(p, label)
  return { context: c, page: p }
}

const signIn = async (target: Page, key: { consumerKey: string; consumerSecret: string }) => {
  await target.goto(`${origin}/console/`)
  await target.getByLabel("Consumer key").fill(key.consumerKey)
  await target.getByLabel("Consumer secret").fill(key.consumerSecret)
  await target.getByRole("button", { name: "Sign in" }).click()
  await target.getByRole("button", { name: "Sign out" }).waitFor()
}

/** Goes to a console path by the menu-less way a shared link takes: a fresh load of the URL. */
const open = async (target: Page, path: string) => {
  await target.goto(`${origin}/console${path}`)
  await target.locator("#page-title").waitFor()
  await target.locator("[aria-busy=true]").waitFor({ state: "detached" })
}

/** Screenshots of the page as it is, at 1280 and 390 px wide. */
const shoot = async (target: Page, name: string) => {
  for (const width of [1280, 390]) {
    await target.setViewportSize({ width, height: width === 1280 ? 900 : 844 })
    await target.screenshot({ path: join(screenshots, `${name}-${width}.png`), fullPage: true })
  }
  await target.setViewportSize({ width: 1280, height: 900 })
}

/** Clicks an action's button and answers its confirmation (typing `typed` first when it asks for it). */
const confirmAction = async (target: Page, scope: ReturnType<Page["locator"]> | Page, label: string, confirmLabel: string, typed?: string) => {
  await scope.getByRole("button", { name: label, exact: true }).click()
  const dialog = target.getByRole("dialog")
  if (typed !== undefined) await dialog.getByRole("textbox").fill(typed)
  await dialog.getByRole("button", { name: confirmLabel, exact: true }).click()
  await dialog.waitFor({ state: "detached" })
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "lm-console-test-"))
  rmSync(screenshots, { recursive: true, force: true })
  mkdirSync(screenshots, { recursive: true })
  built = await buildConsole(join(work, "console"))
  receiver = await startReceiver()
  server = spawnServer({
    LM_DATA_DIR: join(work, "data"),
    LM_CONSOLE_DIR: built.outdir,
    LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"),
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
    LM_WEBHOOK_ALLOW_INSECURE: "1",
    LM_WEBHOOK_ALLOW_PRIVATE: "1",
    LM_STRIPE_WEBHOOK_SECRET: stripe.secret
  })
  apiBase = (await waitForOutput(server, /Listening on (http:\/\/\S+)/, 120_000))[1]!
  origin = new URL(apiBase).origin
  browser = await launchChromium()
  ;({ context, page } = await newPage("admin"))
}, 180_000)

afterAll(async () => {
  await context?.close()
  await browser?.close()
  await receiver?.close()
  if (server !== undefined) {
    server.child.kill("SIGTERM")
    await exitWithin(server, 30_000).catch(() => server.child.kill("SIGKILL"))
  }
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
}, 60_000)

describe("the console in Chromium", { timeout: 120_000 }, () => {
  it("is built small: under 300 KB of JavaScript gzipped", () => {
    console.log(`console JavaScript: ${(built.jsBytes / 1024).toFixed(1)} KiB, ${(built.jsGzipBytes / 1024).toFixed(1)} KiB gzipped`)
    expect(built.jsGzipBytes).toBeLessThan(maxGzipBytes)
  })

  it("is served with a Content-Security-Policy that the browser enforces", async () => {
    const response = await page.goto(`${origin}/console/`)
    const csp = response!.headers()["content-security-policy"]!
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    // An injected inline script is refused by the browser (in a page of its own: the refusal is logged as an error).
    const probe = await browser.newPage()
    await probe.goto(`${origin}/console/`)
    const refused = await probe.evaluate(() =>
      new Promise<string>((resolve) => {
        // In the page (this file is typed for Node, without the DOM's names).
        const page = globalThis as any
        page.document.addEventListener("securitypolicyviolation", (event: { violatedDirective: string }) => resolve(event.violatedDirective))
        const script = page.document.createElement("script")
        script.textContent = "window.injected = true"
        page.document.body.append(script)
        setTimeout(() => resolve(page.injected === true ? "ran" : "no event"), 2000)
      })
    )
    await probe.close()
    expect(refused).toMatch(/^script-src/)
  })

  it("signs in with an API key and shows the dashboard", async () => {
    await page.goto(`${origin}/console/licenses?status=active`)
    // Not signed in: the sign-in page, which comes back to the page asked for.
    await page.getByRole("heading", { name: "Licensing console" }).waitFor()
    await shoot(page, "sign-in")
    await page.getByLabel("Consumer key").fill("ck_nonsense")
    await page.getByLabel("Consumer secret").fill(adminKey.consumerSecret)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("must be ck_ followed by 40 lowercase hex characters").waitFor()
    await page.getByLabel("Consumer key").fill(`ck_${"0".repeat(40)}`)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("The server does not know this key and secret").waitFor()
    await page.getByLabel("Consumer key").fill(adminKey.consumerKey)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Licenses" }).waitFor()
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe("/console/licenses?status=active")
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(["lm-console:session"])
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([])
    await page.getByRole("link", { name: "Dashboard" }).click()
    await page.locator(".dashboard[data-loaded=true]").waitFor()
    expect(await page.locator("[data-tile=licenses] .tile-value").textContent()).toBe("0")
  })

  let key: string
  it("creates a license, finds the device activated through the public API, revokes it and suspends the license (the CRL changes)", async () => {
    await open(page, "/licenses")
    await page.getByText("New license").click()
    await page.getByLabel("Seats (max activations)").fill("two")
    await page.getByRole("button", { name: "Create license" }).click()
    // A value the API cannot take is named beside its field.
    await page.locator(".field-error", { hasText: "must be a whole number" }).waitFor()
    await page.getByLabel("Seats (max activations)").fill("2")
    await page.getByLabel("Product id").fill("7")
    await page.getByRole("button", { name: "Create license" }).click()
    await page.getByRole("heading", { name: /inactive/ }).waitFor()
    key = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!)
    expect(key).toMatch(/^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/)

    // A licensed program activates a device, through the public API.
    const activated = await publicCall("/activate", { license_key: key, fingerprint: "support-desk-laptop", hostname: "laptop-42", app_version: "1.2.0" })
    expect(activated.status).toBe(201)

    // Support finds the license by the start of its key.
    await open(page, "/licenses")
    await page.getByLabel("Key starts with").fill(key.slice(0, 7).toLowerCase())
    await page.getByRole("button", { name: "Search" }).click()
    await page.waitForURL(/search=/)
    const row = page.getByRole("row").filter({ hasText: key })
    await row.waitFor()
    expect(await page.getByRole("row").count()).toBe(2)
    await row.getByRole("link", { name: key }).click()
    const machines = page.getByRole("region", { name: "Machines" })
    await machines.getByText("support-desk-laptop").waitFor()
    expect(await page.locator("[data-crl]").getAttribute("data-crl")).toBe("not listed")
    await shoot(page, "license")

    const machineRow = machines.getByRole("row").filter({ hasText: "support-desk-laptop" })
    await confirmAction(page, machineRow, "Revoke", "Revoke machine")
    await machineRow.locator(".badge-revoked").waitFor()
    const refused = await publicCall("/activate", { license_key: key, fingerprint: "support-desk-laptop" })
    expect(refused.body.code).toBe("machine_revoked")
    // The machines list filters by status, kept in the URL.
    await page.getByRole("button", { name: "active", exact: true }).click()
    await page.getByText("No active machine.").waitFor()
    expect(new URL(page.url()).searchParams.get("machine_status")).toBe("active")
    await page.getByRole("button", { name: "all", exact: true }).click()
    await machineRow.waitFor()

    await machineRow.getByRole("link").click()
    await page.getByRole("heading", { name: /Machine #/ }).waitFor()
    await page.getByText("laptop-42").waitFor()
    await shoot(page, "machine")
    await page.goBack()

    await confirmAction(page, page.locator(".page-actions"), "Suspend", "Suspend")
    await page.getByRole("heading", { name: /suspended/ }).waitFor()
    await page.locator("[data-crl=suspended]").waitFor()
    const validation = await publicCall("/validate", { license_key: key })
    expect(validation.body.data.code).toBe("license_suspended")

    // Terminate asks for the key to be typed: the button stays off until it is.
    await page.getByRole("button", { name: "Reinstate" }).click()
    await page.getByRole("heading", { name: /inactive/ }).waitFor()
    await page.locator("[data-crl='not listed']").waitFor()
    await page.locator(".page-actions").getByRole("button", { name: "Terminate", exact: true }).click()
    const dialog = page.getByRole("dialog")
    expect(await dialog.getByRole("button", { name: "Terminate" }).isDisabled()).toBe(true)
    // Escape cancels, as a dialog does.
    await page.keyboard.press("Escape")
    await dialog.waitFor({ state: "detached" })
    await page.getByRole("heading", { name: /inactive/ }).waitFor()
  })

  it("uploads a release with a progress bar and lists it", async () => {
    await open(page, "/releases")
    await page.getByText("Publish a release").click()
    await page.getByLabel("Product id").fill("7")
    await page.getByLabel("Version", { exact: true }).fill("1.4.0")
    await page.getByLabel("Artifact file").setInputFiles({ name: "app-1.4.0.tar.gz", mimeType: "application/gzip", buffer: Buffer.alloc(3 * 1024 * 1024, 7) })
    await page.getByRole("button", { name: "Publish" }).click()
    const row = page.getByRole("row").filter({ hasText: "1.4.0" })
    await row.waitFor()
    expect(await row.textContent()).toContain("app-1.4.0.tar.gz")
    // The same version again: the API's refusal, in words, beside the button.
    await page.getByLabel("Product id").fill("7")
    await page.getByLabel("Version", { exact: true }).fill("1.4.0")
    await page.getByLabel("Artifact file").setInputFiles({ name: "again.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(1024, 1) })
    await page.getByRole("button", { name: "Publish" }).click()
    await page.locator(".form-actions .error", { hasText: "release_exists" }).waitFor()
    expect(await page.locator("[data-progress]").getAttribute("data-progress")).toBe("100")
    const listed = await admin("GET", "/releases?product_id=7")
    expect(listed.body.data.releases.map((r: { version: string }) => r.version)).toEqual(["1.4.0"])
    await shoot(page, "releases")
  })

  it("deletes a release once its version is typed; it leaves the list and the API", async () => {
    const release = (await admin("POST", "/releases", { product_id: 7, version: "1.5.0", artifact_url: "https://cdn.example.com/1.5.0.zip" })).body.data
    await open(page, "/releases?product_id=7")
    const row = page.getByRole("row").filter({ hasText: "1.5.0" })
    await row.getByRole("button", { name: "Delete", exact: true }).click()
    const dialog = page.getByRole("dialog")
    expect(await dialog.getByRole("button", { name: "Delete release" }).isDisabled()).toBe(true)
    await dialog.getByRole("button", { name: "Cancel" }).click()
    await confirmAction(page, row, "Delete", "Delete release", "1.5.0")
    await row.waitFor({ state: "detached" })
    expect((await admin("GET", `/releases/${release.id}`)).status).toBe(404)
    await page.getByRole("row").filter({ hasText: "1.4.0" }).waitFor()
  })

  it("registers a webhook (its secret shown once), pings it and shows a delivery", async () => {
    await open(page, "/webhooks")
    await page.getByText("Register a webhook").click()
    await page.getByLabel("Name", { exact: true }).fill("CRM")
    await page.getByLabel("URL", { exact: true }).fill(receiver.url)
    await page.getByRole("button", { name: "Register" }).click()
    const secret = await page.locator(".secret-value").textContent()
    expect(secret).toMatch(/^whsec_/)
    await page.getByRole("button", { name: "Done" }).click()
    await page.getByRole("heading", { name: /CRM/ }).waitFor()
    await page.getByRole("button", { name: "Ping" }).click()
    await page.getByText(/^Delivered: HTTP 200/).waitFor()

    // An event after registration is delivered, and shows in the log.
    expect((await admin("POST", `/licenses/${key}/suspend`)).status).toBe(200)
    await eventually(async () => {
      await page.getByRole("button", { name: "Refresh" }).click()
      await page.locator("[aria-busy=true]").waitFor({ state: "detached" })
      const row = page.getByRole("row").filter({ hasText: "license.suspended" })
      expect(await row.locator(".badge-delivered").count()).toBe(1)
    }, { timeout: 30_000, interval: 500 })
    expect(receiver.received.some((r) => r.body?.type === "license.suspended")).toBe(true)
    await page.getByRole("row").filter({ hasText: "license.suspended" }).getByRole("button", { name: "Redeliver" }).click()
    await shoot(page, "webhook")
    await open(page, "/webhooks")
    await shoot(page, "webhooks")
  })

  it("draws the dashboard chart from validations", async () => {
    for (let i = 0; i < 6; i++) await publicCall("/validate", { license_key: key })
    // A few more customers with devices and valid validations, so the dashboard has something to show.
    for (const [n, version] of [[1, "1.2.0"], [2, "1.3.0"], [3, "1.3.0"]] as const) {
      const other = await admin("POST", "/licenses", { max_activations: 3, product_id: 7, expires_at: new Date(Date.now() + n * 9 * 86_400_000).toISOString() })
      for (let d = 0; d < n; d++) {
        await publicCall("/activate", { license_key: other.body.data.license_key, fingerprint: `device-${n}-${d}`, app_version: version })
      }
      for (let v = 0; v < 4 * n; v++) await publicCall("/validate", { license_key: other.body.data.license_key, fingerprint: `device-${n}-0` })
    }
    await eventually(async () => {
      await open(page, "/?period=7d&interval=hour")
      await page.locator(".dashboard[data-loaded=true]").waitFor()
      const chart = page.locator(".chart-canvas").first()
      expect(Number(await chart.getAttribute("data-total"))).toBeGreaterThanOrEqual(6 + 24)
      expect(Number(await chart.getAttribute("data-points"))).toBeGreaterThanOrEqual(168)
    }, { timeout: 30_000, interval: 1000 })
    expect(await page.locator(".chart-canvas canvas").count()).toBe(1)
  })

  it("shows the other pages: licenses, generators and pools, subscriptions", async () => {
    const generator = await admin("POST", "/generators", { name: "Pro keys", prefix: "PRO", default_max_activations: 3 })
    expect(generator.status).toBe(201)
    const subscription = await admin("POST", "/subscriptions", { user_id: 42, billing_period: "month", billing_interval: 1, amount: "29.00", currency: "EUR", license: { max_activations: 3 } })
    expect(subscription.status).toBe(201)
    const another = await admin("POST", "/subscriptions", { user_id: 43, billing_period: "year", billing_interval: 1, amount: "480.00", currency: "USD", license: { max_activations: 5 } })
    expect(another.status).toBe(201)

    await open(page, `/generators/${generator.body.data.id}`)
    await page.getByLabel("How many keys").fill("1200")
    await page.getByRole("button", { name: "Generate" }).click()
    await page.getByText("1,200 of 1,200 keys").waitFor({ timeout: 60_000 })
    await page.getByText("1,200 pending keys").waitFor()
    await shoot(page, "generator")
    await open(page, "/generators")
    await shoot(page, "generators")

    await open(page, `/subscriptions/${subscription.body.data.id}`)
    await page.getByText("Renew early").click()
    await page.getByLabel("Transaction id").fill("txn_123")
    await page.getByRole("button", { name: "Record renewal" }).click()
    await page.getByRole("row").filter({ hasText: "txn_123" }).waitFor()
    await confirmAction(page, page.locator(".page-actions"), "Pause", "Pause")
    await page.getByRole("heading", { name: /on-hold/ }).waitFor()
    await shoot(page, "subscription")
    await open(page, "/subscriptions")
    await shoot(page, "subscriptions")

    // Filters and pages live in the URL: a shared link opens the same list.
    await open(page, `/licenses?generator_id=${generator.body.data.id}&status=pending&page=2`)
    await page.getByText("Page 2 of 60").waitFor()
    await shoot(page, "licenses")

    await open(page, "/?period=7d&interval=hour")
    await page.locator(".dashboard[data-loaded=true]").waitFor()
    await shoot(page, "dashboard")
  })

  it("shows the audit log of those writes, its filters kept in the URL", async () => {
    await open(page, "/audit-log?action=license.suspend")
    await page.getByRole("row").filter({ hasText: "license.suspend" }).first().waitFor()
    expect(await page.getByRole("row").filter({ hasText: "license.create" }).count()).toBe(0)
    await page.getByLabel("Action").fill("generator.generate")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/action=generator\.generate/)
    await page.getByRole("row").filter({ hasText: "generator.generate" }).first().waitFor()
    await shoot(page, "audit-log")
  })

  it("defines a plan on the Policies page, edits its entitlements, applies it; a license of it shows its effective entitlements", async () => {
    await open(page, "/policies")
    await page.getByText("New policy").click()
    await page.getByLabel("Name").fill("Pro plan")
    await page.getByLabel("Entitlements").fill("sync, export, Bad Code")
    await page.getByRole("button", { name: "Create policy" }).click()
    // A code the API refuses is named beside its field.
    await page.locator(".field-error", { hasText: "must match" }).waitFor()
    await page.getByLabel("Entitlements").fill("sync, export")
    await page.getByLabel("Seats").fill("3")
    await page.getByRole("button", { name: "Create policy" }).click()
    await page.getByRole("heading", { name: "Pro plan" }).waitFor()
    const policyId = Number(new URL(page.url()).pathname.split("/").pop())
    await page.locator(".codes").filter({ hasText: "export" }).first().waitFor()

    const license = await admin("POST", "/licenses", { policy_id: policyId, entitlements: ["beta"], max_activations: 1 })
    expect(license.status).toBe(201)
    const planKey: string = license.body.data.license_key
    await open(page, `/licenses/${planKey}`)
    await page.locator(".facts .codes", { hasText: "sync" }).first().waitFor()
    expect(await page.locator(".facts .codes").first().textContent()).toBe("betaexportsync")
    expect(await page.locator(".facts").textContent()).toContain("policy #")

    // Entitlements are live: a code removed from the plan leaves the license's effective ones at once.
    await open(page, `/policies/${policyId}`)
    await page.getByText("Edit policy").click()
    await page.getByLabel("Entitlements").fill("export")
    await page.getByRole("button", { name: "Save" }).click()
    await page.locator(".facts").filter({ hasText: "export" }).waitFor()
    await confirmAction(page, page.locator(".page-actions"), "Apply to its licenses", "Apply")
    await page.getByText("Applied: 1 licenses updated.").waitFor()
    await shoot(page, "policy")
    await open(page, `/licenses/${planKey}`)
    const facts = await page.locator(".facts").textContent()
    expect(facts).toContain("export")
    expect(facts).not.toContain("sync")
    expect(facts).toContain("0 of 3")
    await open(page, "/policies")
    await page.getByRole("link", { name: "Pro plan" }).waitFor()
    await shoot(page, "policies")
  })

  it("lists the billing provider events with their outcome, filtered by outcome", async () => {
    const linked = await admin("POST", "/subscriptions", {
      user_id: 44, billing_period: "month", billing_interval: 1, amount: "19.00", currency: "USD", billing_provider: "stripe", external_id: "sub_console"
    })
    expect(linked.status).toBe(201)
    const target = { externalId: "sub_console", lmId: null, amount: 1900, days: 30, currency: "USD" }
    const now = Math.floor(Date.now() / 1000) * 1000
    const deliveries = [
      stripe.paid(target, { at: now, start: now, end: now + 30 * 86_400_000 }),
      stripe.paused({ ...target, externalId: "sub_nobody" }, { at: now })
    ]
    for (const delivery of deliveries) {
      const response = await fetch(`${apiBase}/billing/stripe/events`, { method: "POST", headers: delivery.headers, body: delivery.body })
      expect(response.status).toBe(200)
    }
    await open(page, "/billing-events")
    const rows = page.getByRole("row")
    await rows.filter({ hasText: "invoice.paid" }).filter({ hasText: "applied" }).waitFor()
    await rows.filter({ hasText: "sub_nobody" }).filter({ hasText: "unmatched" }).waitFor()
    await shoot(page, "billing-events")
    await page.getByLabel("Outcome").selectOption("unmatched")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/outcome=unmatched/)
    await page.locator("[aria-busy=true]").waitFor({ state: "detached" })
    expect(await rows.filter({ hasText: "invoice.paid" }).count()).toBe(0)
    await rows.filter({ hasText: "sub_nobody" }).waitFor()
    // the applied event's subscription is one click away
    await open(page, "/billing-events?outcome=applied")
    await page.getByRole("link", { name: `#${linked.body.data.id}` }).click()
    await page.getByRole("heading", { name: new RegExp(`#${linked.body.data.id}`) }).waitFor()
  })

  let readKey: { id: number; consumerKey: string; consumerSecret: string }
  it("issues a read-only key (secret shown once), which sees no write controls", async () => {
    await open(page, "/api-keys")
    await page.getByText("New API key").click()
    await page.getByLabel("What it is for").fill("support desk, read only")
    await page.getByRole("button", { name: "Issue key" }).click()
    const consumerKey = (await page.locator(".secret-value[data-name='Consumer key']").textContent())!
    const consumerSecret = (await page.locator(".secret-value[data-name='Consumer secret']").textContent())!
    await shoot(page, "api-keys")
    await page.getByRole("button", { name: "Done" }).click()
    expect(await page.locator(".secret-value").count()).toBe(0)
    const listed = await admin("GET", "/api-keys")
    readKey = { id: listed.body.data.api_keys.find((k: { description: string }) => k.description === "support desk, read only").id, consumerKey, consumerSecret }

    // In a German browser: numbers and dates in its locale.
    const reader = await newPage("read-only", "de-DE")
    try {
      await signIn(reader.page, readKey)
      await reader.page.locator(".dashboard[data-loaded=true]").waitFor()
      expect(await reader.page.locator("[data-tile=licenses] .tile-value").textContent()).toMatch(/^1\.2\d\d$/)
      expect(await reader.page.locator("[data-scope]").textContent()).toBe("read only")
      expect(await reader.page.getByRole("link", { name: "API keys" }).count()).toBe(0)
      const writeLabels = /^(New license|New generator|New policy|Apply to its licenses|New subscription|Publish a release|Register a webhook|New API key|Suspend|Revoke|Reinstate|Terminate|Delete|Remove|Renew|Edit settings|Generate|Pause|Resume|Cancel now|Ping|Redeliver|Disable|Enable)$/
      for (const path of ["/", "/licenses", `/licenses/${key}`, "/generators", "/policies", "/subscriptions", "/billing-events", "/releases", "/webhooks", "/webhooks/1"]) {
        await open(reader.page, path)
        expect(await reader.page.getByRole("button", { name: writeLabels }).count(), path).toBe(0)
        expect(await reader.page.locator("details.disclosure").count(), path).toBe(0)
      }
      // The read-only key still reads: the license and its revoked machine are there.
      await open(reader.page, `/licenses/${key}`)
      await reader.page.getByText("support-desk-laptop").waitFor()

      // Revoked by an administrator: the next call returns to the sign-in page, which says why.
      expect((await admin("DELETE", `/api-keys/${readKey.id}`)).status).toBe(200)
      await reader.page.getByRole("link", { name: "Licenses" }).click()
      await reader.page.getByText("The server did not accept this key any more").waitFor()
      expect(await reader.page.evaluate(() => sessionStorage.length)).toBe(0)
    } finally {
      await reader.context.close()
    }
  })

  it("signs out, forgetting the key, and signs in again with the keyboard alone", async () => {
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("button", { name: "Sign in" }).waitFor()
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.getByLabel("Consumer key").focus()
    await page.keyboard.type(adminKey.consumerKey)
    await page.keyboard.press("Tab")
    await page.keyboard.type(adminKey.consumerSecret)
    await page.keyboard.press("Enter")
    await page.getByRole("button", { name: "Sign out" }).waitFor()
  })

  it("logged no error on any page, and the server none either", () => {
    // Chromium logs each refused request as an error: the refusals this test asked for are 401 (a wrong key at
    // sign-in, a revoked key), 403 (a read key's scope, found at sign-in) and 409 (a release published twice).
    expect(errors.filter((e) => !/the server responded with a status of (401|403|409) /.test(e))).toEqual([])
    expect(server.output().split("\n").filter((line) => /Request failed|"level":"(ERROR|FATAL)"/i.test(line))).toEqual([])
  })
})
