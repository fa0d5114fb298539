/**
 * Issue 18: `@lm/client` inside headless Chromium (Debian's package, driven by playwright-core). The SDK's main
 * entry is bundled for the browser, a page on its own origin (with the server's keys pinned and its product
 * bound, issue 28) activates and validates against the real server on another origin (CORS), keeps its proof in
 * `localStorage`, downloads an update into a checked `Blob`, and after a reload with the server out of reach
 * still answers entitlement offline (and refuses another device and a tampered token).
 */
import { createHash } from "node:crypto"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient } from "@lm/client"
import type * as Sdk from "@lm/client"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { bundleSdk, launchChromium, type PageServer, servePage } from "./support/browser.js"
import { createLicense, startServer, type TestServer } from "./support/server.js"

let server: TestServer
let pageServer: PageServer
let browser: Browser

beforeAll(async () => {
  const [lm, sdk] = await Promise.all([startServer("browser"), bundleSdk()])
  server = lm
  pageServer = await servePage(sdk)
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await pageServer?.close()
  await server?.stop()
}, 60_000)

/** The lm server's origin, which the page (on the page server's origin) calls across origins: CORS. */
const api = () => server.origin

describe("@lm/client in Chromium", () => {
  it("validates against the server, downloads an update, then answers entitlement offline from localStorage", async () => {
    const key = await createLicense(server, { max_activations: 1, product_id: 5 })
    const apiBase = `${api()}/api`
    // What the vendor bundles into the page: the server's public keys.
    const trustedKeys = (await createClient({ baseUrl: server.origin }).publicKeys()).keys.map((k) => k.public_key)
    const artifact = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 13) & 255)
    const form = new FormData()
    form.append("product_id", "5")
    form.append("version", "2.0.0")
    form.append("file", new Blob([artifact]), "app-2.0.0.zip")
    const published = await fetch(`${server.apiBase}/releases`, {
      method: "POST",
      body: form,
      headers: { authorization: basic(adminKey.consumerKey, adminKey.consumerSecret) }
    })
    expect(published.status).toBe(201)
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(pageServer.origin)
      await page.waitForFunction(() => "lm" in globalThis)
      const online = await page.evaluate(async ({ key, origin, trustedKeys }) => {
        const lm = (globalThis as unknown as { lm: typeof Sdk }).lm
        const app = lm.createLicensedApp({
          baseUrl: origin,
          trustedKeys,
          productId: 5,
          licenseKey: key.toLowerCase(),
          fingerprint: "browser-device-1",
          storage: lm.localStorageStorage(),
          device: { app_version: "1.0.0" }
        })
        const machine = await app.activate()
        const validation = await app.validate()
        const update = await app.checkForUpdate()
        const blob = update.update_available ? await app.download(update) : undefined
        const digest = blob === undefined ? undefined : new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()))
        const unknown = await lm.createClient({ baseUrl: origin }).validate({ license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ" })
          .then(() => "resolved", (e: unknown) => e instanceof lm.LmError ? `${e.code} ${e.status}` : String(e))
        return {
          machine: machine.fingerprint,
          valid: validation.valid,
          entitlement: await app.entitlement(),
          stored: Object.keys(localStorage),
          unknown,
          download: digest === undefined ? undefined : Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")
        }
      }, { key, origin: api(), trustedKeys })
      expect(online).toMatchObject({
        machine: "browser-device-1",
        valid: true,
        entitlement: { entitled: true, license: { key, fp: "browser-device-1", valid: true } },
        stored: [`lm:state:${key}`],
        unknown: "license_not_found 404",
        download: createHash("sha256").update(artifact).digest("hex")
      })

      // Offline: the API is out of reach (the browser drops its requests); a reloaded page checks from
      // localStorage alone.
      await context.route(`${apiBase}/**`, (route) => route.abort("internetdisconnected"))
      await page.reload()
      await page.waitForFunction(() => "lm" in globalThis)
      const offline = await page.evaluate(async ({ key, origin, trustedKeys }) => {
        const lm = (globalThis as unknown as { lm: typeof Sdk }).lm
        const app = lm.createLicensedApp({
          baseUrl: origin,
          trustedKeys,
          productId: 5,
          licenseKey: key,
          fingerprint: "browser-device-1",
          storage: lm.localStorageStorage()
        })
        const reachable = await app.validate().then(() => "online", (e: unknown) => e instanceof lm.LmError ? e.code : String(e))
        const entitled = await app.entitlement()
        const otherDevice = await lm.createLicensedApp({
          baseUrl: origin,
          trustedKeys,
          productId: 5,
          licenseKey: key,
          fingerprint: "browser-device-2",
          storage: lm.localStorageStorage()
        }).entitlement()
        // Tamper with the stored token: one character of its signed part.
        const stateKey = `lm:state:${key}`
        const state = JSON.parse(localStorage.getItem(stateKey)!)
        const token = state.licenseToken as string
        const flipped = token.slice(0, 10) + (token[10] === "A" ? "B" : "A") + token.slice(11)
        localStorage.setItem(stateKey, JSON.stringify({ ...state, licenseToken: flipped }))
        const tampered = await app.entitlement()
        return { reachable, entitled: entitled.entitled, otherDevice, tampered }
      }, { key, origin: api(), trustedKeys })
      expect(offline).toEqual({
        reachable: "network_error",
        entitled: true,
        otherDevice: { entitled: false, reason: "fingerprint_mismatch" },
        tampered: { entitled: false, reason: expect.stringMatching(/^(bad_signature|malformed_token)$/) }
      })
    } finally {
      await context.close()
    }
  })
})
