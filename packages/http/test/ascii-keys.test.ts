/**
 * Keys are ASCII (CONTRACT §3, issue 27): a key is trimmed of ASCII whitespace and its ASCII letters upper-cased,
 * nothing else. A key holding any other character (`ſ`, which Unicode upper-cases to `S`; `ﬁ`, to `FI`; a BOM or a
 * no-break space, which `trim()` drops) is 400 on every route that takes one, in the body, the path or the query,
 * even when Unicode's rules would turn it into a stored key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"

const KEY = "SSSS-FIFI-AAAA-BBBB"
/** Spellings of {@link KEY} that JavaScript's `trim().toUpperCase()` would accept. */
const unicodeSpellings = ["\u017Fsss-fifi-aaaa-bbbb", "SSSS-\uFB01\uFB01-AAAA-BBBB", "\uFEFFSSSS-FIFI-AAAA-BBBB", "SSSS-FIFI-AAAA-BBBB\u00A0"]

describe("license keys are ASCII", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp("memory")
    expect((await app.call("POST", "/licenses", { body: { license_key: KEY, product_id: 3 } })).status).toBe(201)
    const release = { product_id: 3, version: "1.0.0", artifact_url: "https://example.com/a.zip" }
    expect((await app.call("POST", "/releases", { body: release })).status).toBe(201)
  })
  afterAll(() => app?.close())

  const refused = (res: { status: number; body: any }, what: string) => {
    expect([res.status, res.body.code], `${what}: ${JSON.stringify(res.body)}`).toEqual([400, "rest_invalid_param"])
  }

  it("trims ASCII whitespace and upper-cases ASCII letters", async () => {
    const res = await app.call("POST", "/validate", { body: { license_key: ` \t${KEY.toLowerCase()}\r\n` }, auth: null })
    expect([res.status, res.body.data.license.license_key]).toEqual([200, KEY])
    expect((await app.call("GET", `/licenses/${KEY.toLowerCase()}`)).status).toBe(200)
  })

  it("refuses a key with any other character in a body", async () => {
    for (const key of unicodeSpellings) {
      for (const route of ["/validate", "/activate", "/deactivate", "/heartbeat"]) {
        refused(await app.call("POST", route, { body: { license_key: key, fingerprint: "fp-1" }, auth: null }), `${route} ${JSON.stringify(key)}`)
      }
      refused(await app.call("POST", "/licenses", { body: { license_key: key } }), `POST /licenses ${JSON.stringify(key)}`)
      const subscription = { user_id: 1, billing_period: "month", billing_interval: 1, amount: "9.00", currency: "USD", license_key: key }
      refused(await app.call("POST", "/subscriptions", { body: subscription }), `POST /subscriptions ${JSON.stringify(key)}`)
    }
  })

  it("refuses a key with any other character in the path", async () => {
    for (const key of unicodeSpellings) {
      const path = `/licenses/${encodeURIComponent(key)}`
      const calls: Array<[string, string, unknown]> = [
        ["GET", path, undefined],
        ["GET", `${path}/machines`, undefined],
        ["PUT", path, { max_activations: 5 }],
        ["POST", `${path}/suspend`, {}],
        ["POST", `${path}/revoke`, {}],
        ["POST", `${path}/reinstate`, {}],
        ["POST", `${path}/renew`, { days: 1 }],
        ["POST", `${path}/terminate`, { confirm: true }],
        ["DELETE", path, undefined]
      ]
      for (const [method, route, body] of calls) {
        refused(await app.call(method, route, body === undefined ? {} : { body }), `${method} ${route}`)
      }
    }
    // Nothing happened to the license.
    const license = await app.call("GET", `/licenses/${KEY}`)
    expect([license.status, license.body.data.status, license.body.data.max_activations]).toEqual([200, "inactive", null])
  })

  it("refuses a key with any other character in the query", async () => {
    for (const key of unicodeSpellings) {
      const q = encodeURIComponent(key)
      refused(await app.call("GET", `/updates/check?license_key=${q}&version=0.9.0`, { auth: null }), `updates/check ${JSON.stringify(key)}`)
      refused(await app.call("GET", `/analytics/validations?license_key=${q}`), `analytics/validations ${JSON.stringify(key)}`)
      refused(await app.call("GET", `/licenses?search=${q}`), `licenses?search ${JSON.stringify(key)}`)
    }
  })
})
