/**
 * Issue 31, the console in Chromium (see support.ts): releases (uploaded with a progress bar, deleted once their
 * version is typed), generators and their pools, subscriptions, the licenses list's URL filters, policies.
 */
import { describe, expect, it } from "vitest"
import { admin, confirmAction, expectNoErrors, open, shoot, useConsole } from "./support.js"

const c = useConsole()

describe("the console in Chromium: releases, generators, subscriptions, policies", { timeout: 120_000 }, () => {
  it("uploads a release with a progress bar and lists it", async () => {
    await open(c, c.page, "/releases")
    await c.page.getByText("Publish a release").click()
    await c.page.getByLabel("Product id").fill("7")
    await c.page.getByLabel("Version", { exact: true }).fill("1.4.0")
    await c.page.getByLabel("Artifact file").setInputFiles({ name: "app-1.4.0.tar.gz", mimeType: "application/gzip", buffer: Buffer.alloc(3 * 1024 * 1024, 7) })
    await c.page.getByRole("button", { name: "Publish" }).click()
    const row = c.page.getByRole("row").filter({ hasText: "1.4.0" })
    await row.waitFor()
    expect(await row.textContent()).toContain("app-1.4.0.tar.gz")
    // The same version again: the API's refusal, in words, beside the button.
    await c.page.getByLabel("Product id").fill("7")
    await c.page.getByLabel("Version", { exact: true }).fill("1.4.0")
    await c.page.getByLabel("Artifact file").setInputFiles({ name: "again.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(1024, 1) })
    await c.page.getByRole("button", { name: "Publish" }).click()
    await c.page.locator(".form-actions .error", { hasText: "release_exists" }).waitFor()
    expect(await c.page.locator("[data-progress]").getAttribute("data-progress")).toBe("100")
    const listed = await admin(c, "GET", "/releases?product_id=7")
    expect(listed.body.data.releases.map((r: { version: string }) => r.version)).toEqual(["1.4.0"])
    await shoot(c.page, "releases")
  })

  it("deletes a release once its version is typed; it leaves the list and the API", async () => {
    const release = (await admin(c, "POST", "/releases", { product_id: 7, version: "1.5.0", artifact_url: "https://cdn.example.com/1.5.0.zip" })).body.data
    await open(c, c.page, "/releases?product_id=7")
    const row = c.page.getByRole("row").filter({ hasText: "1.5.0" })
    await row.getByRole("button", { name: "Delete", exact: true }).click()
    const dialog = c.page.getByRole("dialog")
    expect(await dialog.getByRole("button", { name: "Delete release" }).isDisabled()).toBe(true)
    await dialog.getByRole("button", { name: "Cancel" }).click()
    await confirmAction(c.page, row, "Delete", "Delete release", "1.5.0")
    await row.waitFor({ state: "detached" })
    expect((await admin(c, "GET", `/releases/${release.id}`)).status).toBe(404)
    await c.page.getByRole("row").filter({ hasText: "1.4.0" }).waitFor()
  })

  it("shows the other pages: licenses, generators and pools, subscriptions", async () => {
    const generator = await admin(c, "POST", "/generators", { name: "Pro keys", prefix: "PRO", default_max_activations: 3 })
    expect(generator.status).toBe(201)
    const subscription = await admin(c, "POST", "/subscriptions", { user_id: 42, billing_period: "month", billing_interval: 1, amount: "29.00", currency: "EUR", license: { max_activations: 3 } })
    expect(subscription.status).toBe(201)
    const another = await admin(c, "POST", "/subscriptions", { user_id: 43, billing_period: "year", billing_interval: 1, amount: "480.00", currency: "USD", license: { max_activations: 5 } })
    expect(another.status).toBe(201)

    await open(c, c.page, `/generators/${generator.body.data.id}`)
    await c.page.getByLabel("How many keys").fill("1200")
    await c.page.getByRole("button", { name: "Generate" }).click()
    await c.page.getByText("1,200 of 1,200 keys").waitFor({ timeout: 60_000 })
    await c.page.getByText("1,200 pending keys").waitFor()
    await shoot(c.page, "generator")
    await open(c, c.page, "/generators")
    await shoot(c.page, "generators")

    await open(c, c.page, `/subscriptions/${subscription.body.data.id}`)
    await c.page.getByText("Renew early").click()
    await c.page.getByLabel("Transaction id").fill("txn_123")
    await c.page.getByRole("button", { name: "Record renewal" }).click()
    await c.page.getByRole("row").filter({ hasText: "txn_123" }).waitFor()
    await confirmAction(c.page, c.page.locator(".page-actions"), "Pause", "Pause")
    await c.page.getByRole("heading", { name: /on-hold/ }).waitFor()
    await shoot(c.page, "subscription")
    await open(c, c.page, "/subscriptions")
    await shoot(c.page, "subscriptions")

    // Filters and pages live in the URL: a shared link opens the same list.
    await open(c, c.page, `/licenses?generator_id=${generator.body.data.id}&status=pending&page=2`)
    await c.page.getByText("Page 2 of 60").waitFor()
    await shoot(c.page, "licenses")

    await open(c, c.page, "/?period=7d&interval=hour")
    await c.page.locator(".dashboard[data-loaded=true]").waitFor()
    await shoot(c.page, "dashboard")
  })

  it("defines a plan on the Policies page, edits its entitlements, applies it; a license of it shows its effective entitlements", async () => {
    await open(c, c.page, "/policies")
    await c.page.getByText("New policy").click()
    await c.page.getByLabel("Name").fill("Pro plan")
    await c.page.getByLabel("Entitlements").fill("sync, export, Bad Code")
    await c.page.getByRole("button", { name: "Create policy" }).click()
    // A code the API refuses is named beside its field.
    await c.page.locator(".field-error", { hasText: "must match" }).waitFor()
    await c.page.getByLabel("Entitlements").fill("sync, export")
    await c.page.getByLabel("Seats").fill("3")
    await c.page.getByRole("button", { name: "Create policy" }).click()
    await c.page.getByRole("heading", { name: "Pro plan" }).waitFor()
    const policyId = Number(new URL(c.page.url()).pathname.split("/").pop())
    await c.page.locator(".codes").filter({ hasText: "export" }).first().waitFor()

    const license = await admin(c, "POST", "/licenses", { policy_id: policyId, entitlements: ["beta"], max_activations: 1 })
    expect(license.status).toBe(201)
    const planKey: string = license.body.data.license_key
    await open(c, c.page, `/licenses/${planKey}`)
    await c.page.locator(".facts .codes", { hasText: "sync" }).first().waitFor()
    expect(await c.page.locator(".facts .codes").first().textContent()).toBe("betaexportsync")
    expect(await c.page.locator(".facts").textContent()).toContain("policy #")

    // Entitlements are live: a code removed from the plan leaves the license's effective ones at once.
    await open(c, c.page, `/policies/${policyId}`)
    await c.page.getByText("Edit policy").click()
    await c.page.getByLabel("Entitlements").fill("export")
    await c.page.getByRole("button", { name: "Save" }).click()
    await c.page.locator(".facts").filter({ hasText: "export" }).waitFor()
    await confirmAction(c.page, c.page.locator(".page-actions"), "Apply to its licenses", "Apply")
    await c.page.getByText("Applied: 1 licenses updated.").waitFor()
    await shoot(c.page, "policy")
    await open(c, c.page, `/licenses/${planKey}`)
    const facts = await c.page.locator(".facts").textContent()
    expect(facts).toContain("export")
    expect(facts).not.toContain("sync")
    expect(facts).toContain("0 of 3")
    await open(c, c.page, "/policies")
    await c.page.getByRole("link", { name: "Pro plan" }).waitFor()
    await shoot(c.page, "policies")
  })

  it("logged no error on any page, and the server none either", () => expectNoErrors(c))
})
