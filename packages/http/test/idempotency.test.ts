/**
 * Idempotent management writes over real HTTP (CONTRACT §16), on the memory store and on PGlite: a repeat with the
 * same `Idempotency-Key` gets the first answer again (`Idempotent-Replayed: true`) and changes nothing; another body
 * is 422; the key is per API key; a malformed key is 400. (The 409 of a repeat while the first runs, and the 24 h,
 * are checked on the domain's rule with the TestClock: `packages/domain/test/idempotency.test.ts`; the race of two
 * processes in `test/http/idempotency-two-servers.test.ts`.)
 */
import { Api, Authentication, Idempotency } from "@lm/api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"
import { basic, expectError, expectInvalid, expectOk, unique } from "./support/Management.js"

it("every management POST of the API definition carries the Idempotency middleware", () => {
  const missing: Array<string> = []
  let checked = 0
  for (const group of Object.values(Api.groups) as Array<any>) {
    for (const endpoint of Object.values(group.endpoints) as Array<any>) {
      if (endpoint.method !== "POST" || !endpoint.middlewares.has(Authentication)) continue
      checked++
      if (!endpoint.middlewares.has(Idempotency)) missing.push(`${group.identifier}.${endpoint.name}`)
    }
  }
  expect(checked).toBeGreaterThan(20)
  expect(missing).toEqual([])
})

for (const store of ["memory", "pglite"] as const) {
  describe(`Idempotency-Key on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    const licensesOf = async (productId: number) =>
      (await app.call("GET", `/licenses?product_id=${productId}`)).body.meta.total as number
    const post = (path: string, body: unknown, key: string | undefined, auth?: string) =>
      app.call("POST", path, {
        body,
        ...(auth === undefined ? {} : { auth }),
        headers: key === undefined ? {} : { "idempotency-key": key }
      })

    it("a repeat gets the first answer (status and body) with Idempotent-Replayed: true and creates nothing", async () => {
      const product = unique()
      const first = await post("/licenses", { product_id: product }, `create-${product}`)
      const created = expectOk(first, 201)
      expect(first.headers.get("idempotent-replayed")).toBeNull()
      const again = await post("/licenses", { product_id: product }, `create-${product}`)
      expect(again.status).toBe(201)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(first.body)
      expect(created.license_key).toEqual(again.body.data.license_key)
      expect(await licensesOf(product)).toBe(1)
      // Without the header every POST runs.
      expectOk(await post("/licenses", { product_id: product }, undefined), 201)
      expect(await licensesOf(product)).toBe(2)
    })

    it("the same key with another body is 422 idempotency_key_reused; another path too", async () => {
      const product = unique()
      expectOk(await post("/licenses", { product_id: product }, `k-${product}`), 201)
      expectError(await post("/licenses", { product_id: product, max_activations: 3 }, `k-${product}`), 422, "idempotency_key_reused")
      expectError(await post("/generators", { name: "g" }, `k-${product}`), 422, "idempotency_key_reused")
      expect(await licensesOf(product)).toBe(1)
    })

    it("an error answer is kept and replayed too", async () => {
      const product = unique()
      const license = expectOk(await post("/licenses", { product_id: product }, undefined), 201)
      const body = { license_key: license.license_key }
      const first = expectError(await post("/licenses", body, `dup-${product}`), 409, "license_exists")
      const again = await post("/licenses", body, `dup-${product}`)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(expectError(again, 409, "license_exists")).toEqual(first)
    })

    it("keys are per API key: another key's request with the same Idempotency-Key runs", async () => {
      const product = unique()
      const issued = expectOk(await app.call("POST", "/api-keys", { body: { description: "idem", scope: "read_write" } }), 201)
      const other = basic(issued.consumer_key, issued.consumer_secret)
      expectOk(await post("/licenses", { product_id: product }, `per-key-${product}`), 201)
      const theirs = await post("/licenses", { product_id: product }, `per-key-${product}`, other)
      expectOk(theirs, 201)
      expect(theirs.headers.get("idempotent-replayed")).toBeNull()
      expect(await licensesOf(product)).toBe(2)
    })

    it("holds on every management group (policies too)", async () => {
      const name = `plan-${unique()}`
      const first = expectOk(await post("/policies", { name }, `policy-${name}`), 201)
      const again = await post("/policies", { name }, `policy-${name}`)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(expectOk(again, 201)).toEqual(first)
      const listed = (await app.call("GET", "/policies?per_page=100")).body.data.policies as Array<{ name: string }>
      expect(listed.filter((p) => p.name === name)).toHaveLength(1)
    })

    it("a key that is not 1 to 255 printable ASCII characters is 400 naming Idempotency-Key", async () => {
      const product = unique()
      const refused = await post("/licenses", { product_id: product }, "x".repeat(256))
      expect(expectInvalid(refused, "Idempotency-Key")["Idempotency-Key"]).toMatch(/255 printable ASCII/)
      expect(await licensesOf(product)).toBe(0)
    })
  })
}
