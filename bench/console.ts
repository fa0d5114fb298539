/**
 * The console's dashboard on a large store: how long from navigation until every part of it has drawn (the
 * overview tiles, the validations chart, the expiring licenses, the anomalies, the revocation list), in Chromium.
 *
 * A copy of the PGlite template folder is migrated (`lm migrate`) and seeded with SQL (`seed.ts`: `BENCH_CONSOLE_LICENSES` licenses, default
 * 100,000, and `BENCH_CONSOLE_EVENTS` event-log entries over 90 days, default 1,000,000); the bundled server
 * (`packages/http/dist/bin/lm.js`, so build first: `npm run build`) serves the console built fresh from its
 * sources; Debian's Chromium (playwright-core) signs in once, then for each case loads the dashboard
 * `BENCH_CONSOLE_RUNS` times (default 10) and reports the median and worst time from the start of the navigation to
 * the dashboard's `data-loaded` mark:
 * - "load": a fresh page load of `/console/?period=…` (the JavaScript from the browser's cache, as a returning
 *   person has it);
 * - "in the app": a click on Dashboard in the menu from the licenses page (no page load).
 *
 * Run: `nice -n 10 node bench/console.ts` (after `npm run build`). Nothing is asserted: bench/README.md has the figures.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { buildConsole } from "../apps/console/build.ts"
import { launchChromium } from "../test/client/support/browser.ts"
import { seedStatements } from "./seed.ts"
import { bootstrapCredentials, bundledServerEnv, childEnv, envNumber, lmBin, machineLine, pgliteDataDir, runNode, runSql, startListening } from "./support.ts"

const licenses = envNumber("BENCH_CONSOLE_LICENSES", 100_000)
const events = envNumber("BENCH_CONSOLE_EVENTS", 1_000_000)
const runs = envNumber("BENCH_CONSOLE_RUNS", 10)

const progress = (line: string) => process.stderr.write(`console: ${new Date().toISOString().slice(11, 19)} ${line}\n`)

const summary = (times: ReadonlyArray<number>) => {
  const sorted = [...times].sort((a, b) => a - b)
  return { median: sorted[Math.floor(sorted.length / 2)]!, worst: sorted[sorted.length - 1]! }
}

const load = () => loadavg().map((n) => n.toFixed(1)).join(", ")
console.log(`# bench/console.ts, ${new Date().toISOString()}\n${machineLine()}; load average ${load()}`)
const work = mkdtempSync(join(tmpdir(), "lm-bench-console-"))
const data = await pgliteDataDir()
try {
  const built = await buildConsole(join(work, "console"))
  progress(`console built: ${(built.jsGzipBytes / 1024).toFixed(1)} KiB of JavaScript gzipped`)
  // The template folder is an empty database: the schema first, as `lm migrate` makes it.
  await runNode([lmBin, "migrate"], childEnv({ LM_DATA_DIR: data.dir }))
  const seedStart = performance.now()
  await runSql(`pglite:${data.dir}`, seedStatements(licenses, events))
  progress(`seeded ${licenses} licenses and ${events} events in ${((performance.now() - seedStart) / 1000).toFixed(0)} s`)

  const auth = bootstrapCredentials()
  const server = await startListening(
    [lmBin, "serve"],
    bundledServerEnv(auth, { LM_DATA_DIR: data.dir }, {
      LM_CONSOLE_DIR: built.outdir,
      LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"),
      LM_SWEEP_INTERVAL: "0"
    })
  )
  const origin = new URL(server.base).origin
  const browser = await launchChromium()
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${origin}/console/`)
    await page.getByLabel("Consumer key").fill(auth.consumerKey)
    await page.getByLabel("Consumer secret").fill(auth.consumerSecret)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.locator(".dashboard[data-loaded=true]").waitFor({ timeout: 60_000 })
    const total = await page.locator("[data-tile=licenses] .tile-value").textContent()
    progress(`signed in; the dashboard shows ${total} licenses`)

    // How long each API call of the dashboard took, by route: where the time goes.
    const calls = new Map<string, Array<number>>()
    page.on("requestfinished", (request) => {
      const url = new URL(request.url())
      if (!url.pathname.includes("/lm/v1/")) return
      const timing = request.timing()
      const route = url.pathname.replace(/^.*\/lm\/v1/, "")
      calls.set(route, [...calls.get(route) ?? [], timing.responseEnd - timing.requestStart])
    })
    const rows: Array<readonly [string, { median: number; worst: number }]> = []
    // The first run of each case is a warm-up (the server's and the browser's caches).
    for (const period of ["7d", "30d", "90d"]) {
      const times: Array<number> = []
      for (let i = 0; i <= runs; i++) {
        const start = performance.now()
        await page.goto(`${origin}/console/?period=${period}`, { waitUntil: "commit" })
        await page.locator(".dashboard[data-loaded=true]").waitFor({ timeout: 60_000 })
        if (i > 0) times.push(performance.now() - start)
      }
      rows.push([`load, ${period}`, summary(times)])
      progress(`load ${period}: ${summary(times).median.toFixed(0)} ms`)
    }
    const times: Array<number> = []
    for (let i = 0; i <= runs; i++) {
      await page.getByRole("link", { name: "Licenses" }).click()
      await page.locator("[aria-busy=true]").waitFor({ state: "detached" })
      const start = performance.now()
      await page.getByRole("link", { name: "Dashboard" }).click()
      await page.locator(".dashboard[data-loaded=true]").waitFor({ timeout: 60_000 })
      if (i > 0) times.push(performance.now() - start)
    }
    rows.push(["in the app (menu), 30d", summary(times)])
    progress(`in the app: ${summary(times).median.toFixed(0)} ms`)
    console.log(`\n### PGlite: ${licenses.toLocaleString("en")} licenses, ${events.toLocaleString("en")} events over 90 days (load average at the end ${load()})\n`)
    console.log(`| dashboard, from navigation to drawn | median ms | worst ms (of ${runs}) |\n|---|---|---|`)
    for (const [name, t] of rows) console.log(`| ${name} | ${t.median.toFixed(0)} | ${t.worst.toFixed(0)} |`)
    console.log(`\n| API call, request to last byte (browser's timing) | calls | median ms | worst ms |\n|---|---|---|---|`)
    for (const [route, times] of [...calls.entries()].sort()) {
      const t = summary(times)
      console.log(`| ${route} | ${times.length} | ${t.median.toFixed(0)} | ${t.worst.toFixed(0)} |`)
    }
  } finally {
    await browser.close()
    await server.stop()
  }
} finally {
  await data.remove()
  rmSync(work, { recursive: true, force: true })
}
