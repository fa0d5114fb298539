/** The real `Api`, wired the way the composition root wires it, served over HTTP. */
import { Layer } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { Api } from "../src/api/Api.js"
import { layerMiddlewares, layerRoutes, layerServer } from "../src/server/Http.js"
import { HttpSettings } from "../src/server/Settings.js"
import { StorageHealth, SystemHandlers } from "../src/server/System.js"
import { type RunningServer, startServer, stubAuthenticator } from "./support/TestServer.js"

let server: RunningServer
beforeAll(async () => {
  const handlers = SystemHandlers.pipe(
    Layer.provide(layerMiddlewares),
    Layer.provide(stubAuthenticator),
    Layer.provide(StorageHealth.layerAlwaysUp("memory"))
  )
  const layer = layerServer(layerRoutes(Api).pipe(Layer.provide(handlers)), { host: "127.0.0.1", port: 0 }).pipe(
    Layer.provide(HttpSettings.layer())
  )
  server = await startServer(layer)
})
afterAll(() => server.close())

it("serves /health and the OpenAPI document of the lm/v1 API", async () => {
  const health = await fetch(`${server.apiBase}/health`)
  expect(health.status).toBe(200)
  expect(await health.json()).toMatchObject({ success: true, data: { status: "ok", storage: "memory" } })
  const document: any = await (await fetch(`${server.apiBase}/openapi.json`)).json()
  expect(document.info.title).toBe("Licensing Service lm/v1")
  expect(document.paths["/api/lm/v1/health"].get.responses["503"]).toBeDefined()
})
