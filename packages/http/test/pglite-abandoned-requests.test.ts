/**
 * The server in this process on PGlite (on its worker thread, as `lm serve` runs it) under waves of concurrent
 * mixed requests, a quarter of them abandoned by the client mid-flight (support/MixedLoad): an abandoned statement
 * retires the store's one PGlite connection, and the next one must find the session clean. No 500, nothing outside
 * the envelope, every created license readable, and no store error in the log (background work: webhooks, the
 * event log). test/http/pglite-load.test.ts does the same with `lm serve`.
 */
import { inspect } from "node:util"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { startApp, type TestApp } from "./support/App.js"
import { expectIntact, mixedLoad } from "./support/MixedLoad.js"

let app: TestApp
/** What the server logged (warnings and errors: `startApp` logs nothing below). */
const logged: Array<string> = []
beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error"] as const) {
    const original = console[method].bind(console)
    vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
      logged.push(args.map((arg) => (typeof arg === "string" ? arg : inspect(arg, { depth: 10 }))).join(" "))
      original(...args)
    })
  }
  app = await startApp("pglite")
}, 120_000)
afterAll(async () => {

  vi.restoreAllMocks()
  await app?.close()
})

it("answers waves of concurrent, abandoned requests on PGlite: no 500, data intact, no store error", async () => {
  await expectIntact(app.apiBase, await mixedLoad(app.apiBase, 20), () => logged.join("\n").slice(-4000))
  expect(logged.filter((line) => /does not exist|current transaction is aborted/.test(line))).toEqual([])
}, 180_000)
