import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"

for (const store of ["memory", "pglite"] as const) {
  describe(`the bundled server on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    it("answers /health with the store it runs on", async () => {
      const res = await app.call("GET", "/health", { auth: null })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true, data: { status: "ok", storage: store, version: expect.any(String) }, meta: {} })
    })
  })
}
