/**
 * Issue 31, the console in Chromium (see support.ts): its bundle is small, its Content-Security-Policy is enforced,
 * a support person signs in (with the keyboard too) and out, the dashboard chart draws validations.
 */
import { describe, expect, it } from "vitest"
import { maxGzipBytes } from "../../apps/console/build.ts"
import { adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { admin, expectNoErrors, open, publicCall, shoot, useConsole } from "./support.js"

const c = useConsole({ signedIn: false })

describe("the console in Chromium: signing in, the dashboard", { timeout: 120_000 }, () => {
  it("is built small: under 300 KB of JavaScript gzipped", () => {
    console.log(`console JavaScript: ${(c.built.jsBytes / 1024).toFixed(1)} KiB, ${(c.built.jsGzipBytes / 1024).toFixed(1)} KiB gzipped`)
    expect(c.built.jsGzipBytes).toBeLessThan(maxGzipBytes)
  })

  it("is served with a Content-Security-Policy that the browser enforces", async () => {
    const response = await c.page.goto(`${c.origin}/console/`)
    const csp = response!.headers()["content-security-policy"]!
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    // An injected inline script is refused by the browser (in a page of its own: the refusal is logged as an error).
    const probe = await c.browser.newPage()
    await probe.goto(`${c.origin}/console/`)
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
    await c.page.goto(`${c.origin}/console/licenses?status=active`)
    // Not signed in: the sign-in page, which comes back to the page asked for.
    await c.page.getByRole("heading", { name: "Licensing console" }).waitFor()
    await shoot(c.page, "sign-in")
    await c.page.getByLabel("Consumer key").fill("ck_nonsense")
    await c.page.getByLabel("Consumer secret").fill(adminKey.consumerSecret)
    await c.page.getByRole("button", { name: "Sign in" }).click()
    await c.page.getByText("must be ck_ followed by 40 lowercase hex characters").waitFor()
    await c.page.getByLabel("Consumer key").fill(`ck_${"0".repeat(40)}`)
    await c.page.getByRole("button", { name: "Sign in" }).click()
    await c.page.getByText("The server does not know this key and secret").waitFor()
    await c.page.getByLabel("Consumer key").fill(adminKey.consumerKey)
    await c.page.getByRole("button", { name: "Sign in" }).click()
    await c.page.getByRole("heading", { name: "Licenses" }).waitFor()
    expect(new URL(c.page.url()).pathname + new URL(c.page.url()).search).toBe("/console/licenses?status=active")
    expect(await c.page.evaluate(() => Object.keys(sessionStorage))).toEqual(["lm-console:session"])
    expect(await c.page.evaluate(() => Object.keys(localStorage))).toEqual([])
    await c.page.getByRole("link", { name: "Dashboard" }).click()
    await c.page.locator(".dashboard[data-loaded=true]").waitFor()
    expect(await c.page.locator("[data-tile=licenses] .tile-value").textContent()).toBe("0")
  })

  it("draws the dashboard chart from validations", async () => {
    const key = (await admin(c, "POST", "/licenses", { max_activations: 2, product_id: 7 })).body.data.license_key
    for (let i = 0; i < 6; i++) await publicCall(c, "/validate", { license_key: key })
    // A few more customers with devices and valid validations, so the dashboard has something to show.
    for (const [n, version] of [[1, "1.2.0"], [2, "1.3.0"], [3, "1.3.0"]] as const) {
      const other = await admin(c, "POST", "/licenses", { max_activations: 3, product_id: 7, expires_at: new Date(Date.now() + n * 9 * 86_400_000).toISOString() })
      for (let d = 0; d < n; d++) {
        await publicCall(c, "/activate", { license_key: other.body.data.license_key, fingerprint: `device-${n}-${d}`, app_version: version })
      }
      for (let v = 0; v < 4 * n; v++) await publicCall(c, "/validate", { license_key: other.body.data.license_key, fingerprint: `device-${n}-0` })
    }
    await eventually(async () => {
      await open(c, c.page, "/?period=7d&interval=hour")
      await c.page.locator(".dashboard[data-loaded=true]").waitFor()
      const chart = c.page.locator(".chart-canvas").first()
      expect(Number(await chart.getAttribute("data-total"))).toBeGreaterThanOrEqual(6 + 24)
      expect(Number(await chart.getAttribute("data-points"))).toBeGreaterThanOrEqual(168)
    }, { timeout: 30_000, interval: 1000 })
    expect(await c.page.locator(".chart-canvas canvas").count()).toBe(1)
  })

  it("signs out, forgetting the key, and signs in again with the keyboard alone", async () => {
    await c.page.getByRole("button", { name: "Sign out" }).click()
    await c.page.getByRole("button", { name: "Sign in" }).waitFor()
    expect(await c.page.evaluate(() => sessionStorage.length)).toBe(0)
    await c.page.getByLabel("Consumer key").focus()
    await c.page.keyboard.type(adminKey.consumerKey)
    await c.page.keyboard.press("Tab")
    await c.page.keyboard.type(adminKey.consumerSecret)
    await c.page.keyboard.press("Enter")
    await c.page.getByRole("button", { name: "Sign out" }).waitFor()
  })

  it("logged no error on any page, and the server none either", () => expectNoErrors(c))
})
