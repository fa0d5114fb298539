/**
 * Bodies are UTF-8 (CONTRACT §1, §14): a JSON body whose `Content-Type` declares another charset is 415
 * `rest_unsupported_media_type`, on the hot client writes (which the fast path then leaves to the HttpApi path)
 * and on management writes; UTF-8 under any of its names, or no charset, is accepted.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { foreignCharset } from "../src/server/ErrorEnvelope.js"
import { FastPath } from "../src/server/FastPath.js"
import { adminAuth, sharedApp, type TestApp } from "./support/App.js"
import { rawPost } from "./support/RawPost.js"

describe("foreignCharset", () => {
  it("names a declared charset that is not UTF-8", () => {
    expect(foreignCharset("application/json; charset=latin1")).toBe("latin1")
    expect(foreignCharset("application/json;charset=ISO-8859-1")).toBe("ISO-8859-1")
    expect(foreignCharset(`application/json; charset="utf-16"`)).toBe("utf-16")
    expect(foreignCharset("application/json; charset=nonsense")).toBe("nonsense")
    expect(foreignCharset("application/json; charset=")).toBe("")
  })

  it("accepts UTF-8 under its names, and no charset", () => {
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "application/json; charset=UTF-8",
      `application/json; charset="utf-8"`,
      "application/json;charset=utf8",
      "application/json; CHARSET=Utf-8; foo=bar",
      undefined
    ]) {
      expect(foreignCharset(type), String(type)).toBeUndefined()
    }
  })
})

describe("declared charsets over HTTP", () => {
  let app: TestApp
  let key: string
  beforeAll(async () => {
    app = await sharedApp("memory")
    key = (await app.call("POST", "/licenses", { body: { max_activations: 5 } })).body.data.license_key
  })
  afterAll(() => app?.close())

  const total = async () => (await app.call("GET", "/licenses")).body.meta.total as number

  it("refuses another charset with 415 on validate and activate, both paths, and activates nothing", async () => {
    for (const chunked of [false, true]) {
      for (const type of ["application/json; charset=latin1", "application/json; charset=ISO-8859-1", `application/json; charset="utf-16"`]) {
        const validate = await rawPost(app, "/validate", JSON.stringify({ license_key: key }), type, { chunked })
        expect([validate.status, validate.body.code], type).toEqual([415, "rest_unsupported_media_type"])
        expect(validate.body.data.status).toBe(415)
        const activate = await rawPost(app, "/activate", JSON.stringify({ license_key: key, fingerprint: "f" }), type, { chunked })
        expect([activate.status, activate.body.code], type).toEqual([415, "rest_unsupported_media_type"])
      }
    }
    expect((await app.call("GET", `/licenses/${key}/machines`)).body.meta.total).toBe(0)
  })

  it("accepts UTF-8 under its names and no charset, the fast path included", async () => {
    const served = () => app.run(Effect.map(Effect.service(FastPath), (fastPath) => fastPath.served().validate))
    const before = await served()
    const types = ["application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8", `application/json; charset="utf-8"`]
    for (const type of types) {
      const res = await rawPost(app, "/validate", JSON.stringify({ license_key: key }), type)
      expect([res.status, res.body.data.valid], type).toEqual([200, true])
    }
    expect(await served()).toBe(before + types.length)
  })

  it("refuses another charset on POST /licenses and stores nothing; accepts UTF-8", async () => {
    const count = await total()
    const refused = await rawPost(app, "/licenses", "{}", "application/json; charset=windows-1252", { auth: adminAuth })
    expect([refused.status, refused.body.code]).toEqual([415, "rest_unsupported_media_type"])
    expect(refused.body.message).toContain("windows-1252")
    expect(await total()).toBe(count)
    const accepted = await rawPost(app, "/licenses", "{}", `application/json; charset="UTF-8"`, { auth: adminAuth })
    expect(accepted.status).toBe(201)
    expect(await total()).toBe(count + 1)
  })
})
