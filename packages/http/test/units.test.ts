/** The adapter's pure pieces: error mapping, field messages, addresses and allow-lists, the REST root. */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ApiErrors } from "@lm/api"
import { CreateLicenseBody, InvalidParams } from "@lm/api"
import { Services } from "@lm/domain"
import { InvalidIpRange, makeIpAllowList, normalizeIp, parseIpAllowList } from "../src/server/ClientIp.js"
import { normalizeRestRoot } from "../src/server/Settings.js"

class Exceeded extends Schema.TaggedError<Exceeded>()("Exceeded", {
  message: Schema.String,
  max_activations: Schema.NullOr(Schema.Int),
  activation_count: Schema.Int,
  ceiling: Schema.NullOr(Schema.Int)
}) {
  readonly code = "machine_limit_exceeded"
  readonly status = 422
}

describe("ApiErrors.fromDomain", () => {
  it("keeps code, status and message and moves every other field to data", () => {
    const error = ApiErrors.fromDomain(
      new Exceeded({ message: "No seat is free.", max_activations: 3, activation_count: 3, ceiling: null })
    )
    expect(error).toBeInstanceOf(ApiErrors.UnprocessableEntity)
    expect(ApiErrors.toEnvelope(error)).toEqual({
      success: false,
      code: "machine_limit_exceeded",
      message: "No seat is free.",
      data: { status: 422, max_activations: 3, activation_count: 3, ceiling: null }
    })
  })

  it("maps a plain object with code and status too, and an unknown status to 500 internal_error", () => {
    expect(ApiErrors.toEnvelope(ApiErrors.fromDomain({ code: "license_not_found", status: 404, message: "No." })))
      .toEqual({ success: false, code: "license_not_found", message: "No.", data: { status: 404 } })
    const odd = ApiErrors.fromDomain({ code: "teapot", status: 418, message: "I'm a teapot" })
    expect(ApiErrors.toEnvelope(odd)).toMatchObject({ code: "internal_error", data: { status: 500 } })
  })

  it("keeps the JSON form of extra fields that are not plain JSON", () => {
    const at = new Date("2026-01-02T03:04:05Z")
    const error = ApiErrors.fromDomain({ code: "invalid_transition", status: 409, message: "No.", at, none: undefined })
    expect(error.data).toEqual({ status: 409, at: "2026-01-02T03:04:05.000Z" })
  })

  it("encodes through the class's schema exactly as the envelope", () => {
    const error = ApiErrors.make(400, "rest_invalid_param", "Bad.", { params: { a: "is required" } })
    expect(Schema.encodeSync(ApiErrors.BadRequest)(error)).toEqual(ApiErrors.toEnvelope(error))
  })
})

describe("InvalidParams.fromSchemaError", () => {
  const Body = Schema.Struct({
    license_key: Schema.String,
    name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(3))),
    components: Schema.optionalKey(Schema.Array(Schema.Struct({ kind: Schema.Literals(["cpu", "gpu"]) })))
  })
  const paramsOf = (input: unknown) => {
    const exit = Schema.decodeUnknownExit(Body)(input, { errors: "all", onExcessProperty: "error" })
    if (exit._tag !== "Failure") throw new Error("expected a failure")
    const reason = exit.cause.reasons[0]
    if (reason?._tag !== "Fail") throw new Error("expected a schema error")
    return InvalidParams.fromSchemaError(reason.error, "body")
  }

  it("names each bad field with a short message", () => {
    expect(paramsOf({ name: "long", components: [{ kind: "cpu" }, { kind: "tpu" }], extra: true })).toEqual({
      license_key: "is required",
      name: "must be a value with a length of at most 3",
      "components[1].kind": "must be one of cpu, gpu",
      extra: "is not allowed"
    })
  })

  it("says what the contract expects of a value of the wrong type, read from the field's schema", () => {
    const decode = (input: unknown) => {
      const exit = Schema.decodeUnknownExit(CreateLicenseBody)(input, { errors: "all", onExcessProperty: "error" })
      if (exit._tag !== "Failure" || exit.cause.reasons[0]?._tag !== "Fail") throw new Error("expected a schema error")
      return InvalidParams.fromSchemaError(exit.cause.reasons[0].error, "body")
    }
    expect(decode({
      max_activations: "3",
      product_id: "x",
      lease_duration: 1.5,
      is_floating: "yes",
      overage_strategy: "some",
      expires_at: 5,
      meta: []
    })).toEqual({
      max_activations: "must be an integer from 0 to 2147483647, or null",
      product_id: "must be a positive integer, or null",
      lease_duration: "must be an integer",
      is_floating: "must be true or false, or null",
      overage_strategy: "must be one of deny, allow_1_25x, allow_1_5x, allow_2x",
      expires_at: "must be an ISO 8601 date-time with an offset, e.g. 2027-01-31T00:00:00Z, or null",
      meta: "must be an object, or null"
    })
  })

  it("names a problem with the whole value after the slot", () => {
    expect(paramsOf("text")).toEqual({ body: "must be an object" })
    expect(InvalidParams.message({ a: "x", b: "y" })).toBe("Invalid parameter(s): a, b.")
  })
})

describe("client addresses", () => {
  it("writes IPv4-mapped IPv6 as IPv4 and drops what is not an address", () => {
    expect(normalizeIp("::ffff:10.1.2.3")).toBe("10.1.2.3")
    expect(normalizeIp("::FFFF:10.1.2.3")).toBe("10.1.2.3")
    expect(normalizeIp("[2001:db8::1]")).toBe("2001:db8::1")
    expect(normalizeIp(" 192.0.2.1 ")).toBe("192.0.2.1")
    expect(normalizeIp("unknown")).toBeUndefined()
  })

  it("matches IPv4 and IPv6 ranges, single addresses, and mapped addresses", () => {
    const list = parseIpAllowList("10.0.0.0/8, 192.168.1.7,2001:db8::/32 , ::1, ::ffff:172.16.0.0/108")
    expect(list.allows("10.200.3.4")).toBe(true)
    expect(list.allows("::ffff:10.200.3.4")).toBe(true)
    expect(list.allows("11.0.0.1")).toBe(false)
    expect(list.allows("192.168.1.7")).toBe(true)
    expect(list.allows("192.168.1.8")).toBe(false)
    expect(list.allows("2001:db8:ffff::1")).toBe(true)
    expect(list.allows("2001:db9::1")).toBe(false)
    expect(list.allows("::1")).toBe(true)
    expect(list.allows("172.16.9.9")).toBe(true)
    expect(list.allows("172.32.0.1")).toBe(false)
    expect(list.allows("not an ip")).toBe(false)
  })

  it("refuses a range it cannot read", () => {
    for (const bad of ["10.0.0.0/33", "10.0.0/8", "2001:db8::/129", "host.example", "10.0.0.0/x", "::ffff:10.0.0.0/90"]) {
      expect(() => makeIpAllowList([bad]), bad).toThrow(InvalidIpRange)
    }
    expect(parseIpAllowList(" , ").ranges).toEqual([])
  })
})

describe("scopes", () => {
  it("allow reads (GET, HEAD, OPTIONS) to read keys, writes to write keys, both to read_write keys", () => {
    const table = (["read", "write", "read_write"] as const).map((scope) =>
      ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"].map((method) => Services.scopeAllows(scope, method))
    )
    expect(table).toEqual([
      [true, true, true, false, false, false, false],
      [false, false, false, true, true, true, true],
      [true, true, true, true, true, true, true]
    ])
  })
})

describe("settings", () => {
  it("normalises LM_REST_ROOT", () => {
    expect(["/api", "api/", "/wp-json/", "/", ""].map(normalizeRestRoot)).toEqual(["/api", "/api", "/wp-json", "", ""])
  })
})
