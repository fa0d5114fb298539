/**
 * What the console's browser tests share: a real `lm serve` on PGlite, spawned as a process with the console built
 * fresh from its sources, Debian's Chromium driven by playwright-core, and the steps a support person's session is
 * made of (sign in, open a page by its URL, confirm an action). Each test file starts its own server (own data
 * folder, port 0) and browser, so the files run alone or side by side. Every page is photographed at 1280 and 390 px
 * into test/console/screenshots/ (not committed; the README shows two copies from docs/console/).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, expect } from "vitest"
import { buildConsole, type ConsoleBuild } from "../../apps/console/build.ts"
import { adminKey } from "../../packages/http/test/support/App.js"
import { stripeKit } from "../../packages/http/test/support/BillingProviders.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { launchChromium } from "../client/support/browser.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "../http/support/Child.js"
import { migratedPgliteFolder } from "../http/support/PgliteFolder.js"
import { type Receiver, startReceiver } from "../support/receiver.js"

const screenshots = fileURLToPath(new URL("./screenshots/", import.meta.url))

/** An API key's credentials, as the sign-in page asks for them. */
export interface Credentials {
  readonly consumerKey: string
  readonly consumerSecret: string
}

/** One file's running console: filled in by `useConsole`'s `beforeAll`. */
export interface ConsoleRun {
  built: ConsoleBuild
  server: ServerProcess
  origin: string
  apiBase: string
  receiver: Receiver
  browser: Browser
  /** The administrator's browser context and page. */
  context: BrowserContext
  page: Page
  /** Errors any console page logged (CSP violations show here too), by page. */
  readonly errors: Array<string>
  /** The Stripe webhook secret the server checks, and deliveries signed with it. */
  readonly stripe: ReturnType<typeof stripeKit>
}

/**
 * Starts the server, the browser and the administrator's page before the file's tests (signed in as the
 * administrator unless `signedIn` is false), and stops them all after.
 */
export const useConsole = (options: { readonly signedIn?: boolean } = {}): ConsoleRun => {
  const run = { errors: [] as Array<string>, stripe: stripeKit() } as unknown as ConsoleRun
  let work: string | undefined
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "lm-console-test-"))
    mkdirSync(screenshots, { recursive: true })
    run.built = await buildConsole(join(work, "console"))
    run.receiver = await startReceiver()
    run.server = spawnServer({
      // Starts migrated: the child skips initdb and the migrations.
      LM_DATA_DIR: await migratedPgliteFolder(join(work, "data")),
      LM_CONSOLE_DIR: run.built.outdir,
      LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"),
      PORT: "0",
      HOST: "127.0.0.1",
      LM_SWEEP_INTERVAL: "0",
      LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
      LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
      LM_WEBHOOK_ALLOW_INSECURE: "1",
      LM_WEBHOOK_ALLOW_PRIVATE: "1",
      LM_STRIPE_WEBHOOK_SECRET: run.stripe.secret
    })
    run.apiBase = (await waitForOutput(run.server, /Listening on (http:\/\/\S+)/, 120_000))[1]!
    run.origin = new URL(run.apiBase).origin
    run.browser = await launchChromium()
    ;({ context: run.context, page: run.page } = await newPage(run, "admin"))
    if (options.signedIn !== false) await signIn(run, run.page, adminKey)
  }, 180_000)

  afterAll(async () => {
    await run.context?.close()
    await run.browser?.close()
    await run.receiver?.close()
    if (run.server !== undefined) {
      run.server.child.kill("SIGTERM")
      await exitWithin(run.server, 30_000).catch(() => run.server.child.kill("SIGKILL"))
    }
    if (work !== undefined) rmSync(work, { recursive: true, force: true })
  }, 60_000)
  return run
}

/** A management call as the administrator (the test's own set-up, not the console's). */
export const admin = async (run: ConsoleRun, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${run.apiBase}${route}`, {
    method,
    headers: { authorization: basic(adminKey.consumerKey, adminKey.consumerSecret), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: await response.json() as any }
}

/** A public client call, as licensed software makes it. */
export const publicCall = async (run: ConsoleRun, route: string, body: unknown) => {
  const response = await fetch(`${run.apiBase}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  return { status: response.status, body: await response.json() as any }
}

const watch = (run: ConsoleRun, target: Page, label: string) => {
  target.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") run.errors.push(`${label}: ${message.type()}: ${message.text()}`)
  })
  target.on("pageerror", (error) => run.errors.push(`${label}: ${error.message}`))
}

/** A page in a browser context of its own (its own session storage), in `locale`, its errors watched. */
export const newPage = async (run: ConsoleRun, label: string, locale = "en-US") => {
  const c = await run.browser.newContext({ viewport: { width: 1280, height: 900 }, locale })
  const p = await c.newPage()
  watch(run, p, label)
  return { context: c, page: p }
}

export const signIn = async (run: ConsoleRun, target: Page, key: Credentials) => {
  await target.goto(`${run.origin}/console/`)
  await target.getByLabel("Consumer key").fill(key.consumerKey)
  await target.getByLabel("Consumer secret").fill(key.consumerSecret)
  await target.getByRole("button", { name: "Sign in" }).click()
  await target.getByRole("button", { name: "Sign out" }).waitFor()
}

/** Goes to a console path by the menu-less way a shared link takes: a fresh load of the URL. */
export const open = async (run: ConsoleRun, target: Page, path: string) => {
  await target.goto(`${run.origin}/console${path}`)
  await target.locator("#page-title").waitFor()
  await target.locator("[aria-busy=true]").waitFor({ state: "detached" })
}

/** Screenshots of the page as it is, at 1280 and 390 px wide. */
export const shoot = async (target: Page, name: string) => {
  for (const width of [1280, 390]) {
    await target.setViewportSize({ width, height: width === 1280 ? 900 : 844 })
    await target.screenshot({ path: join(screenshots, `${name}-${width}.png`), fullPage: true })
  }
  await target.setViewportSize({ width: 1280, height: 900 })
}

/** Clicks an action's button and answers its confirmation (typing `typed` first when it asks for it). */
export const confirmAction = async (target: Page, scope: ReturnType<Page["locator"]> | Page, label: string, confirmLabel: string, typed?: string) => {
  await scope.getByRole("button", { name: label, exact: true }).click()
  const dialog = target.getByRole("dialog")
  if (typed !== undefined) await dialog.getByRole("textbox").fill(typed)
  await dialog.getByRole("button", { name: confirmLabel, exact: true }).click()
  await dialog.waitFor({ state: "detached" })
}

/**
 * No console page logged an error and the server logged none either. Chromium logs each refused request as an
 * error: the refusals these tests ask for are 401 (a wrong key at sign-in, a revoked key), 403 (a read key's scope,
 * found at sign-in) and 409 (a release published twice).
 */
export const expectNoErrors = (run: ConsoleRun) => {
  expect(run.errors.filter((e) => !/the server responded with a status of (401|403|409) /.test(e))).toEqual([])
  expect(run.server.output().split("\n").filter((line) => /Request failed|"level":"(ERROR|FATAL)"/i.test(line))).toEqual([])
}
