/** The real `Api`, wired by the composition root (every group with its handlers), served over HTTP. */
import { afterAll, beforeAll, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"

let server: TestApp
beforeAll(async () => {
  server = await sharedApp("memory")
})
afterAll(() => server?.close())

it("serves /health and the OpenAPI document of the lm/v1 API", async () => {
  const health = await fetch(`${server.apiBase}/health`)
  expect(health.status).toBe(200)
  expect(await health.json()).toMatchObject({ success: true, data: { status: "ok", storage: "memory" } })
  const document: any = await (await fetch(`${server.apiBase}/openapi.json`)).json()
  expect(document.info.title).toBe("Licensing Service lm/v1")
  expect(document.paths["/api/lm/v1/health"].get.responses["503"]).toBeDefined()
})
