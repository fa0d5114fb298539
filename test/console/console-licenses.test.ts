/**
 * Issue 31, the console in Chromium (see support.ts): a support person creates a license, finds the device a client
 * activated through the public API, revokes the device, suspends the license and sees the revocation list change.
 */
import { describe, expect, it } from "vitest"
import { confirmAction, expectNoErrors, open, publicCall, shoot, useConsole } from "./support.js"

const c = useConsole()

describe("the console in Chromium: licenses and machines", { timeout: 120_000 }, () => {
  let key: string
  it("creates a license, finds the device activated through the public API, revokes it and suspends the license (the CRL changes)", async () => {
    await open(c, c.page, "/licenses")
    await c.page.getByText("New license").click()
    await c.page.getByLabel("Seats (max activations)").fill("two")
    await c.page.getByRole("button", { name: "Create license" }).click()
    // A value the API cannot take is named beside its field.
    await c.page.locator(".field-error", { hasText: "must be a whole number" }).waitFor()
    await c.page.getByLabel("Seats (max activations)").fill("2")
    await c.page.getByLabel("Product id").fill("7")
    await c.page.getByRole("button", { name: "Create license" }).click()
    await c.page.getByRole("heading", { name: /inactive/ }).waitFor()
    key = decodeURIComponent(new URL(c.page.url()).pathname.split("/").pop()!)
    expect(key).toMatch(/^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/)

    // A licensed program activates a device, through the public API.
    const activated = await publicCall(c, "/activate", { license_key: key, fingerprint: "support-desk-laptop", hostname: "laptop-42", app_version: "1.2.0" })
    expect(activated.status).toBe(201)

    // Support finds the license by the start of its key.
    await open(c, c.page, "/licenses")
    await c.page.getByLabel("Key starts with").fill(key.slice(0, 7).toLowerCase())
    await c.page.getByRole("button", { name: "Search" }).click()
    await c.page.waitForURL(/search=/)
    const row = c.page.getByRole("row").filter({ hasText: key })
    await row.waitFor()
    expect(await c.page.getByRole("row").count()).toBe(2)
    await row.getByRole("link", { name: key }).click()
    const machines = c.page.getByRole("region", { name: "Machines" })
    await machines.getByText("support-desk-laptop").waitFor()
    expect(await c.page.locator("[data-crl]").getAttribute("data-crl")).toBe("not listed")
    await shoot(c.page, "license")

    const machineRow = machines.getByRole("row").filter({ hasText: "support-desk-laptop" })
    await confirmAction(c.page, machineRow, "Revoke", "Revoke machine")
    await machineRow.locator(".badge-revoked").waitFor()
    const refused = await publicCall(c, "/activate", { license_key: key, fingerprint: "support-desk-laptop" })
    expect(refused.body.code).toBe("machine_revoked")
    // The machines list filters by status, kept in the URL.
    await c.page.getByRole("button", { name: "active", exact: true }).click()
    await c.page.getByText("No active machine.").waitFor()
    expect(new URL(c.page.url()).searchParams.get("machine_status")).toBe("active")
    await c.page.getByRole("button", { name: "all", exact: true }).click()
    await machineRow.waitFor()

    await machineRow.getByRole("link").click()
    await c.page.getByRole("heading", { name: /Machine #/ }).waitFor()
    await c.page.getByText("laptop-42").waitFor()
    await shoot(c.page, "machine")
    await c.page.goBack()

    await confirmAction(c.page, c.page.locator(".page-actions"), "Suspend", "Suspend")
    await c.page.getByRole("heading", { name: /suspended/ }).waitFor()
    await c.page.locator("[data-crl=suspended]").waitFor()
    const validation = await publicCall(c, "/validate", { license_key: key })
    expect(validation.body.data.code).toBe("license_suspended")

    // Terminate asks for the key to be typed: the button stays off until it is.
    await c.page.getByRole("button", { name: "Reinstate" }).click()
    await c.page.getByRole("heading", { name: /inactive/ }).waitFor()
    await c.page.locator("[data-crl='not listed']").waitFor()
    await c.page.locator(".page-actions").getByRole("button", { name: "Terminate", exact: true }).click()
    const dialog = c.page.getByRole("dialog")
    expect(await dialog.getByRole("button", { name: "Terminate" }).isDisabled()).toBe(true)
    // Escape cancels, as a dialog does.
    await c.page.keyboard.press("Escape")
    await dialog.waitFor({ state: "detached" })
    await c.page.getByRole("heading", { name: /inactive/ }).waitFor()
  })

  it("logged no error on any page, and the server none either", () => expectNoErrors(c))
})
