/**
 * The server in this process on PGlite (on its worker thread, as `lm serve` runs it) under waves of concurrent
 * mixed requests, a quarter of them abandoned by the client mid-flight (support/MixedLoad): an abandoned statement
 * retires the store's one PGlite connection, and the next one must find the session clean. No 500, nothing outside
 * the envelope, every created license readable. test/http/pglite-load.test.ts does the same with `lm serve`.
 */
import { afterAll, beforeAll, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"
import { expectIntact, mixedLoad } from "./support/MixedLoad.js"

let app: TestApp
beforeAll(async () => {
  app = await startApp("pglite")
}, 120_000)
afterAll(() => app?.close())

it("answers waves of concurrent, abandoned requests on PGlite: no 500, data intact", async () => {
  await expectIntact(app.apiBase, await mixedLoad(app.apiBase, 20), () => "see the log above")
}, 180_000)
