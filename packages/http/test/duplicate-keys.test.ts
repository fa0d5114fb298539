/**
 * A JSON body with a duplicated key is 400 `rest_invalid_json` (CONTRACT §14), on every route with a body and
 * on both request paths (the fast path of the hot client writes, the HttpApi path of every route), at any depth,
 * with keys compared after their escapes are decoded; nothing is stored.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FastPath } from "../src/server/FastPath.js"
import { duplicateKey } from "../src/server/JsonKeys.js"
import { adminAuth, sharedApp, type TestApp } from "./support/App.js"
import { rawPost } from "./support/RawPost.js"

describe("duplicateKey", () => {
  it("finds a key repeated in one object, at any depth, after decoding escapes", () => {
    expect(duplicateKey(`{"license_key":"A","license_key":"B"}`)).toBe("license_key")
    expect(duplicateKey(`{"a\\u0022":1,"a\\"":2}`)).toBe(`a"`)
    expect(duplicateKey(`{"\\u0061":1,"a":2}`)).toBe("a")
    expect(duplicateKey(`{"meta":{"x":1,"y":{"z":1,"z":2}}}`)).toBe("z")
    expect(duplicateKey(`[{"a":1},{"b":[{"c":1,"c":1}]}]`)).toBe("c")
    expect(duplicateKey(` { "a" : 1 , "a" : 1 } `)).toBe("a")
    // Objects of many keys (kept in a set past 16): the duplicate is still found, the others are not.
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`)
    expect(duplicateKey(`{${many.join(",")}}`)).toBeUndefined()
    expect(duplicateKey(`{${many.join(",")},"k3":0}`)).toBe("k3")
    expect(duplicateKey(`{${many.join(",")},"x":{"k3":0,"k3":1}}`)).toBe("k3")
  })

  it("accepts equal keys in different objects, and equal strings that are values", () => {
    expect(duplicateKey(`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`)).toBeUndefined()
    expect(duplicateKey(`{"a":"a","b":"a","c":["a","a"]}`)).toBeUndefined()
    expect(duplicateKey(`{"a\\\\":1,"a":2,"a\\"":3,"a\\\\\\"":4}`)).toBeUndefined()
    expect(duplicateKey(`{"k":"\\"}, \\"k\\": 1","kk":1}`)).toBeUndefined()
    expect(duplicateKey(`{"a":1}`)).toBeUndefined()
    expect(duplicateKey(`[]`)).toBeUndefined()
    expect(duplicateKey(`"a"`)).toBeUndefined()
  })
})

describe("duplicated keys over HTTP", () => {
  let app: TestApp
  let auth: string
  beforeAll(async () => {
    app = await sharedApp("memory")
    auth = adminAuth
  })
  afterAll(() => app?.close())

  const total = async () => (await app.call("GET", "/licenses")).body.meta.total as number
  const served = () => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served()))

  it("refuses them on validate and activate, fast path and HttpApi path, and activates nothing", async () => {
    const key = (await app.call("POST", "/licenses", { body: { max_activations: 5 } })).body.data.license_key as string
    const before = await served()
    const bodies = [
      `{"license_key":"A","license_key":"B"}`,
      `{"license_key":"${key}","license_key":"${key}"}`,
      `{"license_key":"${key}","fingerprint":"f1","meta":{"a":1,"a":2}}`
    ]
    for (const chunked of [false, true]) {
      for (const body of bodies) {
        for (const path of ["/validate", "/activate"]) {
          const res = await rawPost(app, path, body, "application/json", { chunked })
          expect([res.status, res.body.code], `${path} ${body}`).toEqual([400, "rest_invalid_json"])
        }
      }
    }
    const after = await served()
    expect(after.validate - before.validate).toBe(3)
    expect(after.activate - before.activate).toBe(3)
    const machines = await app.call("GET", `/licenses/${key}/machines`)
    expect(machines.status).toBe(200)
    expect(machines.body.meta.total).toBe(0)
    const res = await rawPost(app, "/validate", `{"license_key":"${key}","license_key":"${key}"}`, "application/json")
    expect(res.body.message).toContain(`"license_key"`)
  })

  it("refuses them on POST /licenses, at the top and nested, and stores nothing", async () => {
    const count = await total()
    for (const body of [
      `{"license_key":"AAAA-BBBB-CCCC-DDD1","license_key":"AAAA-BBBB-CCCC-DDD2"}`,
      `{"max_activations":2,"max_activations":3}`,
      `{"meta":{"plan":"pro","plan":"free"}}`,
      `{"meta":{"a\\u0022":1,"a\\"":2}}`
    ]) {
      for (const chunked of [false, true]) {
        const res = await rawPost(app, "/licenses", body, "application/json", { chunked, auth })
        expect([res.status, res.body.code], body).toEqual([400, "rest_invalid_json"])
      }
    }
    expect(await total()).toBe(count)
    const ok = await rawPost(app, "/licenses", `{"meta":{"a\\\\":1,"a":2}}`, "application/json", { auth })
    expect(ok.status).toBe(201)
    expect(await total()).toBe(count + 1)
  })
})
