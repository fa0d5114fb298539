/** A suite's missing outside service skips it on a developer's machine and fails it in CI (test/support/services.ts). */
import { describe, expect, it } from "vitest"
import { inCi, serviceUrl } from "./services.js"

describe("serviceUrl", () => {
  it("answers the URL when the variable is set, in CI or not", () => {
    expect(serviceUrl("DATABASE_URL", { DATABASE_URL: "postgres://db/x" })).toBe("postgres://db/x")
    expect(serviceUrl("REDIS_URL", { REDIS_URL: "redis://r:6379", CI: "true" })).toBe("redis://r:6379")
  })

  it("answers \"\" (the suite skips) when it is missing outside CI", () => {
    expect(serviceUrl("DATABASE_URL", {})).toBe("")
    expect(serviceUrl("REDIS_URL", { REDIS_URL: "  ", CI: "false" })).toBe("")
    expect(serviceUrl("REDIS_URL", { CI: "0" })).toBe("")
  })

  it("throws, naming the variable, when it is missing in CI", () => {
    expect(() => serviceUrl("REDIS_URL", { CI: "true" })).toThrow(/REDIS_URL is not set, and CI is/)
    expect(() => serviceUrl("DATABASE_URL", { CI: "1", DATABASE_URL: "" })).toThrow(/Set DATABASE_URL/)
  })

  it("reads CI as set unless it is empty, 0 or false", () => {
    expect([inCi({}), inCi({ CI: "" }), inCi({ CI: "0" }), inCi({ CI: "False" })]).toEqual([false, false, false, false])
    expect([inCi({ CI: "true" }), inCi({ CI: "1" }), inCi({ CI: "github" })]).toEqual([true, true, true])
  })
})
