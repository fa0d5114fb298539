/**
 * Authentication of the management routes over real HTTP (CONTRACT §2, §11, §14), on the memory store and on
 * PGlite, with keys issued through POST /api-keys: no credentials or a bad secret is 401 with
 * `WWW-Authenticate`, the wrong scope is 403 `rest_forbidden` (and changes nothing), the right scope passes;
 * the API key routes need `read_write`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminKey, sharedApp, type TestApp } from "./support/App.js"
import { activate, basic, createLicense, expectError, expectOk, type Reply } from "./support/Management.js"

/** Credentials of one scope. */
interface Credentials {
  readonly id: number
  readonly consumer_key: string
  readonly consumer_secret: string
}

/** A 401 as the contract writes it: the envelope and the Basic challenge. */
const expectUnauthorized = (res: Reply) => {
  expectError(res, 401, "rest_unauthorized")
  expect(res.headers.get("www-authenticate")).toBe(`Basic realm="lm"`)
}

for (const store of ["memory", "pglite"] as const) {
  describe(`management auth on ${store}`, () => {
    let app: TestApp
    const keys = {} as Record<"read" | "write" | "read_write", Credentials>
    /** Every management route, with a path to existing resources and a valid body for writes. */
    let routes: ReadonlyArray<{ readonly method: string; readonly path: string; readonly body?: unknown }>

    beforeAll(async () => {
      app = await sharedApp(store)
      for (const scope of ["read", "write", "read_write"] as const) {
        keys[scope] = expectOk(await app.call("POST", "/api-keys", { body: { scope, description: scope } }), 201)
      }
      const { license_key } = await createLicense(app)
      const machine = await activate(app, license_key, "auth-fp")
      const generator = expectOk(await app.call("POST", "/generators", { body: { name: "auth" } }), 201)
      routes = [
        { method: "GET", path: "/licenses" },
        { method: "GET", path: "/licenses/export" },
        { method: "GET", path: `/licenses/${license_key}` },
        { method: "GET", path: `/licenses/${license_key}/machines` },
        { method: "GET", path: `/machines/${machine.id}` },
        { method: "GET", path: "/generators" },
        { method: "GET", path: `/generators/${generator.id}` },
        { method: "GET", path: "/api-keys" },
        { method: "GET", path: "/analytics/overview" },
        { method: "GET", path: "/analytics/validations" },
        { method: "GET", path: "/analytics/anomalies" },
        { method: "GET", path: "/analytics/expiring" },
        { method: "POST", path: "/licenses", body: {} },
        { method: "POST", path: "/licenses/import", body: { format: "lm", data: [{ license_key: `IMPORTED-${license_key}` }] } },
        { method: "PUT", path: `/licenses/${license_key}`, body: { max_activations: 1 } },
        { method: "DELETE", path: `/licenses/${license_key}` },
        { method: "POST", path: `/licenses/${license_key}/renew`, body: { days: 1 } },
        { method: "POST", path: `/licenses/${license_key}/suspend` },
        { method: "POST", path: `/licenses/${license_key}/revoke` },
        { method: "POST", path: `/licenses/${license_key}/reinstate` },
        { method: "POST", path: `/licenses/${license_key}/terminate`, body: { confirm: true } },
        { method: "DELETE", path: `/machines/${machine.id}` },
        { method: "POST", path: `/machines/${machine.id}/revoke` },
        { method: "POST", path: "/generators", body: { name: "x" } },
        { method: "PUT", path: `/generators/${generator.id}`, body: { name: "y" } },
        { method: "DELETE", path: `/generators/${generator.id}` },
        { method: "POST", path: `/generators/${generator.id}/generate`, body: { count: 1 } },
        { method: "POST", path: "/api-keys", body: { scope: "read" } },
        { method: "DELETE", path: `/api-keys/${keys.read.id}` }
      ]
    })
    afterAll(() => app?.close())

    const auth = (scope: keyof typeof keys) => basic(keys[scope].consumer_key, keys[scope].consumer_secret)
    const call = (route: { method: string; path: string; body?: unknown }, authorization: string | null) =>
      app.call(route.method, route.path, { auth: authorization, ...(route.body === undefined ? {} : { body: route.body }) })

    /** The state every refused request must leave untouched. */
    const snapshot = async () => ({
      licenses: (await app.call("GET", "/licenses?per_page=100")).body,
      generators: (await app.call("GET", "/generators?per_page=100")).body,
      apiKeys: (await app.call("GET", "/api-keys?per_page=100")).body.data.api_keys.map((k: any) => k.id)
    })

    it("GET and POST on a management route: none and a bad secret are 401, the wrong scope 403, the right one passes", async () => {
      const badSecret = basic(keys.read_write.consumer_key, `cs_${"0".repeat(40)}`)
      const cases: ReadonlyArray<readonly [string, string | null, number, number]> = [
        ["no credentials", null, 401, 401],
        ["a bad secret", badSecret, 401, 401],
        ["an unknown key", basic(`ck_${"9".repeat(40)}`, keys.read.consumer_secret), 401, 401],
        ["malformed credentials", basic("admin", "admin"), 401, 401],
        ["a read key", auth("read"), 200, 403],
        ["a write key", auth("write"), 403, 201],
        ["a read_write key", auth("read_write"), 200, 201]
      ]
      for (const [name, authorization, onGet, onPost] of cases) {
        const get = await app.call("GET", "/licenses", { auth: authorization })
        const post = await app.call("POST", "/licenses", { auth: authorization, body: { meta: { by: name } } })
        expect([name, get.status, post.status]).toEqual([name, onGet, onPost])
        for (const res of [get, post]) {
          if (res.status === 401) expectUnauthorized(res)
          else if (res.status === 403) expectError(res, 403, "rest_forbidden")
          else expect(res.body.success).toBe(true)
        }
      }
    })

    it("asks for credentials on every management route, before reading the body", async () => {
      const before = await snapshot()
      for (const route of routes) {
        expectUnauthorized(await call(route, null))
        expectUnauthorized(await call(route, basic(keys.read_write.consumer_key, keys.write.consumer_secret)))
      }
      expectUnauthorized(await app.call("POST", "/licenses", { auth: null, body: "{not json" }))
      expectUnauthorized(await app.call("POST", "/licenses", { auth: null, body: { colour: "red" } }))
      expect(await snapshot()).toEqual(before)
    })

    it("refuses writes to a read key and reads to a write key with 403 rest_forbidden, changing nothing", async () => {
      const before = await snapshot()
      for (const route of routes) {
        const scope = route.method === "GET" ? "write" : "read"
        const res = await call(route, auth(scope))
        expect([route.method, route.path, res.status]).toEqual([route.method, route.path, 403])
        expectError(res, 403, "rest_forbidden")
      }
      expect(await snapshot()).toEqual(before)
    })

    /** The API key routes, which only `read_write` keys may use (CONTRACT §11). */
    const isApiKeyRoute = (route: { readonly path: string }) => route.path.startsWith("/api-keys")

    it("lets a read key read every management route but the API keys", async () => {
      for (const route of routes.filter((r) => r.method === "GET" && !isApiKeyRoute(r))) {
        const res = await call(route, auth("read"))
        expect([route.path, res.status]).toEqual([route.path, 200])
      }
    })

    it("refuses read and write keys every API key route with 403 rest_forbidden, changing nothing", async () => {
      const before = await snapshot()
      const apiKeyRoutes = [...routes.filter(isApiKeyRoute), { method: "POST", path: "/api-keys", body: { scope: "read_write" } }]
      for (const route of apiKeyRoutes) {
        for (const scope of ["read", "write"] as const) {
          const res = await call(route, auth(scope))
          expect([scope, route.method, route.path, res.status]).toEqual([scope, route.method, route.path, 403])
          expectError(res, 403, "rest_forbidden")
        }
      }
      expect(await snapshot()).toEqual(before)
      expect((await call({ method: "GET", path: "/api-keys" }, auth("read_write"))).status).toBe(200)
    })

    it("answers an unknown path with 404 rest_no_route with or without credentials (routing comes first)", async () => {
      expectError(await app.call("GET", "/licences", { auth: null }), 404, "rest_no_route")
      expectError(await app.call("GET", "/licences"), 404, "rest_no_route")
      const wrongMethod = await app.call("PATCH", "/licenses", { auth: null, body: {} })
      expectError(wrongMethod, 405, "rest_method_not_allowed")
      expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD, POST")
    })

    it("covers every management route of the OpenAPI document, each declaring HTTP Basic", async () => {
      const document = (await app.call("GET", "/openapi.json", { auth: null })).body
      const documented: Array<string> = []
      for (const [path, operations] of Object.entries<any>(document.paths)) {
        if (!/^\/api\/lm\/v1\/(licenses|machines|generators|api-keys|analytics)/.test(path)) continue
        for (const [method, operation] of Object.entries<any>(operations)) {
          expect([method, path, operation.security]).toEqual([method, path, [{ basic: [] }]])
          documented.push(`${method.toUpperCase()} ${path.slice("/api/lm/v1".length)}`)
        }
      }
      const template = (path: string) =>
        path.replace(/^\/licenses\/(?!(?:import|export)$)[^/]+/, "/licenses/{key}").replace(/^\/(machines|generators|api-keys)\/\d+/, "/$1/{id}")
      expect(routes.map((r) => `${r.method} ${template(r.path)}`).sort()).toEqual(documented.sort())
    })

    it("keeps the bootstrap key working alongside the issued ones", async () => {
      expect((await app.call("GET", "/licenses", { auth: basic(adminKey.consumerKey, adminKey.consumerSecret) })).status).toBe(200)
    })
  })
}
