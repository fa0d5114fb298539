/**
 * Input the stores cannot keep as sent, or the server cannot walk, is refused at the door in the envelope:
 * NUL characters and unpaired surrogates anywhere in a body or a NUL in the URL (400), bodies nested deeper than
 * 64 levels (400), and request lines or headers over Node's limit (413, not Node's bare status line).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_BODY_DEPTH, nestsDeeperThan } from "../src/server/ErrorEnvelope.js"
import { sharedApp, type TestApp } from "./support/App.js"

describe("nestsDeeperThan", () => {
  it("counts nesting outside strings only", () => {
    expect(nestsDeeperThan("[[[]]]", 3)).toBe(false)
    expect(nestsDeeperThan("[[[[]]]]", 3)).toBe(true)
    expect(nestsDeeperThan(`{"a":"[[[[[[\\"[[[["}`, 1)).toBe(false)
    expect(nestsDeeperThan(`{"a":{"b":[{}]}}`, 3)).toBe(true)
  })
})

describe("refused input", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await sharedApp("memory")
  })
  afterAll(() => app?.close())

  const expect400 = (res: { status: number; body: any; headers: Headers }, field: string) => {
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ success: false, code: "rest_invalid_param", data: { status: 400 } })
    expect(Object.keys(res.body.data.params)).toEqual([field])
    expect(res.headers.get("x-request-id")).toBeTruthy()
  }

  it("refuses NUL and unpaired surrogates in any string of a body, naming where", async () => {
    expect400(await app.call("POST", "/licenses", { body: `{"meta":{"note":"a\\u0000b"}}` }), "meta.note")
    expect400(await app.call("POST", "/generators", { body: `{"name":"x\\ud800y"}` }), "name")
    expect400(await app.call("POST", "/activate", { body: `{"license_key":"AAAA-BBBB-CCCC-DDDD","fingerprint":"f\\udc00"}`, auth: null }), "fingerprint")
    // A well-formed pair is fine text.
    const ok = await app.call("POST", "/licenses", { body: `{"meta":{"note":"\\ud83d\\ude00"}}` })
    expect(ok.status).toBe(201)
    expect(ok.body.data.meta.note).toBe("\u{1F600}")
  })

  it("refuses a NUL in the query", async () => {
    expect400(await app.call("GET", "/licenses?search=%00"), "query")
  })

  it(`refuses bodies nested more than ${MAX_BODY_DEPTH} levels`, async () => {
    const deep = "[".repeat(20_000) + "]".repeat(20_000)
    expect400(await app.call("POST", "/licenses", { body: `{"meta":{"a":${deep}}}` }), "body")
    expect400(await app.call("POST", "/validate", { body: `{"license_key":${deep}}`, auth: null }), "body")
  })

  it("answers an oversized request line in the envelope with a request id", async () => {
    const res = await fetch(`${app.apiBase}/licenses/${"A".repeat(20_000)}`)
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ success: false, code: "rest_payload_too_large", data: { status: 413 } })
    expect(res.headers.get("x-request-id")).toBeTruthy()
  })
})
