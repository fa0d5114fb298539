/**
 * Requests the server must refuse, built from its own OpenAPI document: every operation the document lists
 * (so new routes are fuzzed without touching the tests), each request spoiled in at least one way that the
 * contract says is a 4xx: a method the path does not serve, an unknown path, a malformed or unknown path
 * target, missing or wrong credentials, a bad query parameter, a body that is not a JSON object, a body field
 * its schema refuses, a missing required field, an unknown field where the schema forbids them, a wrong
 * content type, a body over 1 MiB. Everything that is not the spoiler is random or nasty (huge strings, NUL,
 * unpaired surrogates, 1e308, 2^53+1, 10 000 levels of nesting, ...), so the server parses it before refusing.
 *
 * A spoiled request must never change stored data, whatever the rest of it holds: the fuzz test relies on this
 * to compare the data before and after.
 */
import fc from "fast-check"

// ---- JSON with tokens JSON.stringify cannot write -------------------------------------------------------------

/** A JSON token written verbatim: numbers such as `9007199254740993`, `1e400` or `-0`, or deep nesting. */
export class RawJson {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
  toString(): string {
    return this.text.length > 40 ? `${this.text.slice(0, 20)}…(${this.text.length} chars)` : this.text
  }
}

/** `value` as JSON text, with each {@link RawJson} written as is. */
export const toJson = (value: unknown): string => {
  const raws: Array<string> = []
  const text = JSON.stringify(value, (_key, v) => {
    if (v instanceof RawJson) {
      raws.push(v.text)
      return `\u0001raw${raws.length - 1}\u0001`
    }
    return v
  })
  return raws.length === 0 ? text : text.replace(/"\\u0001raw(\d+)\\u0001"/g, (_, i: string) => raws[Number(i)]!)
}

/** What the server sees after parsing `value` as JSON. */
export const parsed = (value: unknown): unknown => JSON.parse(toJson(value))

// ---- the subset of JSON Schema the OpenAPI document uses ------------------------------------------------------

/** A JSON Schema as the OpenAPI document writes it (only the keywords checked here are typed). */
export interface JsonSchema {
  readonly type?: string | ReadonlyArray<string>
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly enum?: ReadonlyArray<unknown>
  readonly not?: JsonSchema
  readonly minimum?: number
  readonly maximum?: number
  readonly exclusiveMinimum?: number
  readonly exclusiveMaximum?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly minItems?: number
  readonly maxItems?: number
  readonly items?: JsonSchema
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly additionalProperties?: boolean | JsonSchema
}

const typeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value

/**
 * Whether `schema` may accept `value`. Keywords not listed in {@link JsonSchema} (patterns, formats) are
 * ignored, so `false` is certain and `true` is only possible: requests are spoiled with values this refuses.
 * Lengths are compared so that `false` holds whether the server counts UTF-16 units or code points.
 */
export const accepts = (schema: JsonSchema, value: unknown): boolean => {
  if (schema.not !== undefined && accepts(schema.not, value)) return false
  if (schema.anyOf !== undefined && !schema.anyOf.some((member) => accepts(member, value))) return false
  if (schema.enum !== undefined && !schema.enum.some((member) => member === value)) return false
  if (schema.type !== undefined) {
    const types = typeof schema.type === "string" ? [schema.type] : schema.type
    const actual = typeOf(value)
    const ok = types.some((type) =>
      type === actual || (type === "integer" && Number.isInteger(value)) || (type === "number" && actual === "number")
    )
    if (!ok) return false
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return false
    if (schema.maximum !== undefined && value > schema.maximum) return false
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return false
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return false
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) return false
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) return false
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return false
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return false
    const items = schema.items
    if (items !== undefined && !value.every((item) => accepts(items, item))) return false
  }
  if (typeOf(value) === "object") {
    const object = value as Record<string, unknown>
    const properties = schema.properties ?? {}
    for (const name of schema.required ?? []) if (!Object.hasOwn(object, name)) return false
    for (const [name, field] of Object.entries(object)) {
      const fieldSchema = properties[name]
      if (fieldSchema !== undefined) {
        if (!accepts(fieldSchema, field)) return false
      } else if (schema.additionalProperties === false) {
        return false
      } else if (typeof schema.additionalProperties === "object" && !accepts(schema.additionalProperties, field)) {
        return false
      }
    }
  }
  return true
}

// ---- nasty values ---------------------------------------------------------------------------------------------

/** Levels of nesting in the deep documents. */
export const DEPTH = 10_000

/** `[[[...]]]`, {@link DEPTH} levels. */
export const deepArrays = new RawJson("[".repeat(DEPTH) + "]".repeat(DEPTH))
/** `{"a":{"a":...1}}`, {@link DEPTH} levels. */
export const deepObjects = new RawJson("{\"a\":".repeat(DEPTH) + "1" + "}".repeat(DEPTH))
/** A 900 KB string: under the 1 MiB body limit, far over every field limit. */
export const hugeString = "x".repeat(900 * 1024)

/** Values that break careless parsers, number handling, databases and serializers. */
export const nastyValues: ReadonlyArray<unknown> = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  new RawJson("-0"),
  1e308,
  -1e308,
  new RawJson("9007199254740993"),
  new RawJson("1e400"),
  new RawJson("-1e400"),
  "NaN",
  "Infinity",
  "",
  " ",
  "5",
  "true",
  "null",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\u202e\u0301\ufeff",
  "😀".repeat(300),
  "'; DROP TABLE lm_licenses; --",
  "%s%n%x",
  "../../../../etc/passwd",
  hugeString,
  {},
  [],
  [null],
  { a: { b: { c: [] } } },
  { "\u0000": "\u0000" },
  new RawJson("{\"__proto__\":{\"polluted\":1}}"),
  { constructor: { prototype: { polluted: 1 } } },
  deepArrays,
  deepObjects,
  { a: deepArrays }
]

/** Nasty values the schema refuses, plus values at its edges (max + 1, maxLength + 1, not in the enum). */
const refusedValues = (schema: JsonSchema): Array<unknown> => {
  const edges: Array<unknown> = ["not-in-any-enum", { nested: "object" }, ["an", "array"]]
  const members = schema.anyOf ?? [schema]
  for (const member of members) {
    if (member.maximum !== undefined) edges.push(member.maximum + 1)
    if (member.minimum !== undefined) edges.push(member.minimum - 1)
    if (member.exclusiveMinimum !== undefined) edges.push(member.exclusiveMinimum)
    if (member.maxLength !== undefined) edges.push("x".repeat(member.maxLength + 1))
    if (member.maxItems !== undefined && member.items !== undefined) {
      edges.push(Array.from({ length: member.maxItems + 1 }, () => ({})))
    }
    if (member.anyOf !== undefined) edges.push(...refusedValues(member))
  }
  return [...nastyValues, ...edges].filter((value) => !accepts(schema, parsedOf(value)))
}

/**
 * `parsed` of each nasty value, worked out once: the 900 KB string and the 10 000-level documents would otherwise be
 * written and parsed again for every field of every request (most of the fuzz's own CPU before).
 */
const parsedNasty = new Map(nastyValues.map((value) => [value, parsed(value)]))
const parsedOf = (value: unknown): unknown => parsedNasty.has(value) ? parsedNasty.get(value) : parsed(value)

/** {@link refusedValues} of each schema object of the OpenAPI document, worked out once. */
const refusedBySchema = new WeakMap<JsonSchema, Array<unknown>>()
const refusedValuesOf = (schema: JsonSchema): Array<unknown> => {
  let values = refusedBySchema.get(schema)
  if (values === undefined) refusedBySchema.set(schema, values = refusedValues(schema))
  return values
}

// ---- values a schema accepts ----------------------------------------------------------------------------------

/** A value `schema` probably accepts (random within its bounds); used around the spoiler. */
export const valueFor = (schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> => {
  if (schema.anyOf !== undefined && schema.anyOf.length > 0) {
    return fc.oneof(...schema.anyOf.map((member) => valueFor(member, depth + 1)))
  }
  if (schema.enum !== undefined && schema.enum.length > 0) return fc.constantFrom(...schema.enum)
  const type = typeof schema.type === "string" ? schema.type : schema.type?.[0]
  switch (type) {
    case "null":
      return fc.constant(null)
    case "boolean":
      return fc.boolean()
    case "integer": {
      const min = Math.max(schema.minimum ?? -1e6, schema.exclusiveMinimum === undefined ? -1e6 : schema.exclusiveMinimum + 1)
      const max = Math.min(schema.maximum ?? 1e6, schema.exclusiveMaximum === undefined ? 1e6 : schema.exclusiveMaximum - 1)
      return min <= max ? fc.integer({ min, max }) : fc.constant(min)
    }
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case "string":
      return fc.string({
        minLength: schema.minLength ?? 0,
        maxLength: Math.max(schema.minLength ?? 0, Math.min(schema.maxLength ?? 40, 40)),
        unit: "grapheme"
      })
    case "array":
      return depth > 3 || schema.items === undefined
        ? fc.constant([])
        : fc.array(valueFor(schema.items, depth + 1), { maxLength: Math.min(schema.maxItems ?? 3, 3) })
    case "object":
      return schema.properties === undefined || depth > 3
        ? fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()), {
          maxKeys: 4
        })
        : objectFor(schema, depth + 1)
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** An object with the schema's required properties and some of the others. */
const objectFor = (schema: JsonSchema, depth: number): fc.Arbitrary<Record<string, unknown>> => {
  const required = new Set(schema.required ?? [])
  const entries = Object.entries(schema.properties ?? {})
  return fc.tuple(...entries.map(([name, field]) =>
    required.has(name) ? valueFor(field, depth).map((v) => [name, v] as const) : fc.option(valueFor(field, depth).map((v) => [name, v] as const), { nil: undefined })
  )).map((pairs) => Object.fromEntries(pairs.filter((pair) => pair !== undefined)))
}

// ---- the operations of the OpenAPI document -------------------------------------------------------------------

/** A query parameter of an operation. */
export interface QueryParam {
  readonly name: string
  readonly schema: JsonSchema
  readonly required: boolean
}

/** One (method, path) of the API, relative to the API base (`/licenses/{key}`). */
export interface Operation {
  readonly method: string
  readonly template: string
  readonly pathParams: ReadonlyArray<string>
  readonly query: ReadonlyArray<QueryParam>
  /** The `application/json` body schema, when the operation takes one. */
  readonly body: JsonSchema | undefined
  /** Needs an API key. */
  readonly management: boolean
}

/**
 * Every operation of an OpenAPI document whose paths start with `apiPath` (`/api/lm/v1`), plus `GET
 * /openapi.json`, which serves the document and is not listed in it.
 */
export const operationsOf = (document: any, apiPath: string): Array<Operation> => {
  const operations: Array<Operation> = []
  for (const [path, item] of Object.entries<any>(document.paths ?? {})) {
    if (!path.startsWith(apiPath)) continue
    for (const [method, operation] of Object.entries<any>(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue
      const parameters: Array<any> = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
      const security: Array<unknown> = operation.security ?? document.security ?? []
      operations.push({
        method: method.toUpperCase(),
        template: path.slice(apiPath.length),
        pathParams: parameters.filter((p) => p.in === "path").map((p) => p.name as string),
        query: parameters.filter((p) => p.in === "query").map((p) => ({
          name: p.name as string,
          schema: (p.schema ?? {}) as JsonSchema,
          required: p.required === true
        })),
        body: operation.requestBody?.content?.["application/json"]?.schema as JsonSchema | undefined,
        management: security.some((requirement) => Object.keys(requirement as object).length > 0)
      })
    }
  }
  if (!operations.some((op) => op.template === "/openapi.json")) {
    operations.push({ method: "GET", template: "/openapi.json", pathParams: [], query: [], body: undefined, management: false })
  }
  return operations
}

/** The collection a path parameter points into: `key` is a license; `{id}` is named by the segment before it. */
export const collectionOf = (template: string, param: string): string => {
  if (param === "key") return "licenses"
  const segments = template.split("/")
  const index = segments.indexOf(`{${param}}`)
  return segments[index - 1] ?? param
}

/** `template` with each `{param}` replaced (values are inserted as given: encode them first). */
export const fillPath = (template: string, values: Readonly<Record<string, string>>): string =>
  template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? "1")

// ---- the fuzzing context --------------------------------------------------------------------------------------

/** What the generators need to know about the running server. */
export interface FuzzContext {
  /** The path of the API base, e.g. `/api/lm/v1`. */
  readonly apiPath: string
  readonly operations: ReadonlyArray<Operation>
  /** Existing targets by collection: license keys under `licenses`, ids under `machines`, `generators`, ... */
  readonly targets: Readonly<Record<string, ReadonlyArray<string>>>
  /** `Authorization` values: a read_write key, a read key and a write key. */
  readonly auth: { readonly admin: string; readonly read: string; readonly write: string }
}

/** A request to send. `path` is relative to the origin; `why` says what makes it a 4xx. */
export interface FuzzRequest {
  readonly why: string
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
}

/** A short description of a request for failure messages. */
export const describeRequest = (request: FuzzRequest): string => {
  const cut = (s: string, n: number) => s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s
  const body = request.body === undefined
    ? ""
    : typeof request.body === "string"
    ? ` body=${cut(JSON.stringify(request.body), 300)}`
    : ` body=<${request.body.length} bytes>`
  return `[${request.why}] ${request.method} ${cut(request.path, 200)} headers=${cut(JSON.stringify(request.headers), 300)}${body}`
}

const methodsWithBody = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** Methods tried on paths that do not serve them (HEAD is left out: its answer has no body to check). */
export const probeMethods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"] as const

/** The methods a path serves (a GET route also answers HEAD). */
export const servedMethods = (context: FuzzContext, template: string): Set<string> =>
  new Set(context.operations.filter((op) => op.template === template).map((op) => op.method))

/** Characters of the default key alphabet never use `0`, `1`, `I`, `O`: keys made of these exist nowhere. */
const absentKeyChar = fc.constantFrom(..."01IO")

/** A well-formed license key that no license has (random case and padding: keys are normalized). */
export const absentKey = fc.tuple(
  fc.array(fc.array(absentKeyChar, { minLength: 4, maxLength: 4 }).map((g) => g.join("")), { minLength: 4, maxLength: 4 }),
  fc.boolean(),
  fc.constantFrom("", " ", "  \t")
).map(([groups, lower, pad]) => {
  const key = groups.join("-")
  return `${pad}${lower ? key.toLowerCase() : key}${pad}`
})

/** Could `text` be read as a license key (2–8 dash-separated groups of A-Z0-9, after trim and upper-case; §4)? */
export const looksLikeKey = (text: string): boolean => /^[A-Z0-9]+(?:-[A-Z0-9]+){1,7}$/.test(text.trim().toUpperCase())

/** License keys that are not in the key format (as path segments: already encoded where needed). */
export const malformedKeySegments: ReadonlyArray<string> = [
  "abc",
  "AAAA",
  "A-B-C-D-E-F-G-H-I",
  "AAAA--BBBB-CCCC",
  "AAAA_BBBB_CCCC_DDDD",
  "%C3%84%C3%84%C3%84%C3%84-BBBB-CCCC-DDDD",
  "AAAA-BBBB-CCCC-DDD%00",
  "%00",
  "%",
  "%E0%A4%A",
  "%ED%A0%80",
  "..%2F..%2Fetc%2Fpasswd",
  "%20",
  "null",
  "A".repeat(8000)
]

/** Path ids that are not positive integers, or are ones no object has. */
export const badIdSegments: ReadonlyArray<string> = [
  "abc",
  "1e3",
  "-1",
  "0",
  "-0",
  "1.5",
  "0x3E8",
  "99999999999999999999",
  "9007199254740993",
  "1e400",
  "NaN",
  "Infinity",
  "%00",
  "%",
  "%E0%A4%A",
  "%D9%A3",
  "987654321",
  "9".repeat(8000)
]

/** A path segment for a malformed or unknown target of `param`. */
const badSegment = (template: string, param: string): fc.Arbitrary<string> =>
  collectionOf(template, param) === "licenses"
    ? fc.oneof(
      fc.constantFrom(...malformedKeySegments),
      absentKey.map(encodeURIComponent),
      fc.string({ minLength: 1, maxLength: 60, unit: "grapheme" }).filter((s) => !looksLikeKey(s)).map(encodeURIComponent)
    )
    : fc.oneof(
      fc.constantFrom(...badIdSegments),
      fc.integer({ min: 1_000_000, max: Number.MAX_SAFE_INTEGER }).map(String),
      // No digit at all, so no spelling of a small id (" 1", "+1", "1.0", "0x1") slips through.
      fc.string({ minLength: 1, maxLength: 60, unit: "grapheme" }).filter((s) => !/\p{Nd}/u.test(s)).map(encodeURIComponent)
    )

/** A path segment for an existing target of `param` (or an unknown one when there is none). */
const goodSegment = (context: FuzzContext, template: string, param: string): fc.Arbitrary<string> => {
  const targets = context.targets[collectionOf(template, param)] ?? []
  return targets.length > 0 ? fc.constantFrom(...targets).map(encodeURIComponent) : badSegment(template, param)
}

/** Query values that are certainly refused, by parameter (paging, ids, times, enums); undefined when none is. */
export const badQueryValues = (param: QueryParam): ReadonlyArray<string> | undefined => {
  if (param.name === "page" || param.name === "per_page") return ["0", "-1", "abc", "1.5", "NaN", "Infinity", "1,2"]
  if (/_id$/.test(param.name)) return ["abc", "1.5", "NaN", "--1"]
  if (/^expires_(before|after)$/.test(param.name) || /(^|_)(from|to|at|date)$/.test(param.name)) {
    return ["not-a-date", "2027-13-45T99:99:99Z", "yesterday"]
  }
  const values = param.schema.enum ?? param.schema.anyOf?.find((m) => m.enum !== undefined)?.enum
  return values === undefined ? undefined : ["not-a-member", "%00"].filter((v) => !values.includes(v))
}

/** A query value that is probably accepted. */
const goodQueryValue = (param: QueryParam): fc.Arbitrary<string> => {
  if (param.name === "page") return fc.constantFrom("1", "2", "1000")
  if (param.name === "per_page") return fc.constantFrom("1", "20", "100", "1000")
  const values = param.schema.enum ?? param.schema.anyOf?.find((m) => m.enum !== undefined)?.enum
  if (values !== undefined) return fc.constantFrom(...values.map(String))
  if (/_id$/.test(param.name)) return fc.integer({ min: 1, max: 1_000_000 }).map(String)
  if (/^expires_/.test(param.name)) return fc.date({ noInvalidDate: true }).map((d) => d.toISOString())
  return fc.string({ maxLength: 20, unit: "grapheme" })
}

/** Some of the operation's query parameters with probably accepted values. */
const goodQuery = (op: Operation): fc.Arbitrary<Array<[string, string]>> =>
  fc.tuple(...op.query.map((param) =>
    param.required
      ? goodQueryValue(param).map((v) => [param.name, v] as [string, string])
      : fc.option(goodQueryValue(param).map((v) => [param.name, v] as [string, string]), { nil: undefined, freq: 3 })
  )).map((pairs) => pairs.filter((p): p is [string, string] => p !== undefined))

const withQuery = (path: string, pairs: ReadonlyArray<readonly [string, string]>): string =>
  pairs.length === 0 ? path : `${path}?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`

/** `Authorization` values no key matches. */
export const badAuthorizations = (context: FuzzContext): ReadonlyArray<string | undefined> => {
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`
  const admin = Buffer.from(context.auth.admin.slice("Basic ".length), "base64").toString("utf8").split(":")
  return [
    undefined,
    "",
    "Basic",
    "Basic ",
    "Basic %%%%",
    "Basic " + Buffer.from("no-colon").toString("base64"),
    basic("", ""),
    basic("ck_x", "cs_y"),
    basic(admin[0]!, `cs_${"0".repeat(40)}`),
    basic(admin[0]!, admin[1]! + "x"),
    basic(`ck_${"f".repeat(40)}`, admin[1]!),
    basic("ck_" + "a".repeat(5000), "cs_" + "b".repeat(5000)),
    basic(admin[0]! + "\u0000", admin[1]!),
    `Bearer ${admin[1]}`,
    `Digest username="${admin[0]}"`
  ]
}

/** Random headers around the request: request ids (sane or not), accept, a forwarded-for the server must not trust. */
const noiseHeaders = fc.record(
  {
    "x-request-id": fc.oneof(fc.string({ maxLength: 200 }), fc.constantFrom("", "a".repeat(129), "id with spaces", "ok-id.1:2@3+4=5")),
    accept: fc.constantFrom("*/*", "text/html", "application/xml", "application/json;q=0"),
    "x-forwarded-for": fc.constantFrom("1.2.3.4", "not-an-ip", "::1, 10.0.0.1")
  },
  { requiredKeys: [] }
)

const jsonHeaders = { "content-type": "application/json" } as const

/** The semantic targets a body field can name: a license key on the client routes, a generator or machine id. */
const bodyTarget = (context: FuzzContext, op: Operation, name: string): fc.Arbitrary<unknown> | undefined => {
  if (name === "license_key" && !op.management) return fc.constantFrom(...(context.targets.licenses ?? ["AAAA-AAAA-AAAA-AAAA"]))
  if (name === "generator_id") return fc.constantFrom(...(context.targets.generators ?? ["1"]).map(Number))
  if (name === "machine_id") return fc.constantFrom(...(context.targets.machines ?? ["1"]).map(Number))
  return undefined
}

/** A body object around the spoiler: each field absent, probably valid, or nasty. */
const bodyAround = (context: FuzzContext, op: Operation): fc.Arbitrary<Record<string, unknown>> => {
  const entries = Object.entries(op.body?.properties ?? {})
  const required = new Set(op.body?.required ?? [])
  return fc.tuple(...entries.map(([name, schema]) => {
    const value = fc.oneof(
      { weight: 4, arbitrary: bodyTarget(context, op, name) ?? valueFor(schema) },
      { weight: 1, arbitrary: fc.constantFrom(...nastyValues) }
    ).map((v) => [name, v] as const)
    return required.has(name) ? value : fc.option(value, { nil: undefined, freq: 2 })
  })).map((pairs) => Object.fromEntries(pairs.filter((p) => p !== undefined)))
}

/** Encodes a body value as the request body. */
const jsonBody = (value: unknown): string => toJson(value)

// ---- the spoilers ---------------------------------------------------------------------------------------------

type Spoiler = fc.Arbitrary<FuzzRequest>

/** Fills the path of `op` with existing targets and adds probably accepted query parameters. */
const goodPath = (context: FuzzContext, op: Operation): fc.Arbitrary<string> =>
  fc.tuple(
    fc.tuple(...op.pathParams.map((p) => goodSegment(context, op.template, p).map((v) => [p, v] as const))),
    goodQuery(op)
  ).map(([values, query]) => withQuery(context.apiPath + fillPath(op.template, Object.fromEntries(values)), query))

/** Credentials that pass for `op`: none on public routes (or random ones, which they ignore). */
const goodAuth = (context: FuzzContext, op: Operation): fc.Arbitrary<Record<string, string>> =>
  op.management
    ? fc.constantFrom(
      { authorization: context.auth.admin },
      { authorization: op.method === "GET" ? context.auth.read : context.auth.write }
    )
    : fc.constantFrom({}, { authorization: "Basic %%%%" }, { authorization: context.auth.admin })

/** A body that passes or not, for requests spoiled elsewhere. */
const anyBody = (context: FuzzContext, op: Operation): fc.Arbitrary<{ body?: string; headers: Record<string, string> }> =>
  methodsWithBody.has(op.method)
    ? fc.oneof(
      bodyAround(context, op).map((b) => ({ body: jsonBody(b), headers: { ...jsonHeaders } })),
      fc.constant({ headers: {} })
    )
    : fc.constant({ headers: {} })

const request = (
  why: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined
): FuzzRequest => {
  const made: FuzzRequest = body === undefined ? { why, method, path, headers } : { why, method, path, headers, body }
  // fast-check prints counterexamples with this: the short description, not a 900 KB body.
  return Object.defineProperty(made, fc.toStringMethod, { value: () => describeRequest(made), enumerable: false })
}

/** Spoilers that apply to `op`. */
export const spoilers = (context: FuzzContext, op: Operation): Array<Spoiler> => {
  const out: Array<Spoiler> = []
  const served = servedMethods(context, op.template)
  const unserved = probeMethods.filter((m) => !served.has(m))
  if (unserved.length > 0) {
    out.push(fc.tuple(fc.constantFrom(...unserved), goodPath(context, op), goodAuth(context, op), noiseHeaders, anyBody(context, op)).map(
      ([method, path, auth, noise, body]) =>
        request("method not served", method, path, { ...noise, ...auth, ...body.headers }, methodsWithBody.has(method) ? body.body : undefined)
    ))
  }
  out.push(fc.tuple(goodPath(context, op), fc.oneof(fc.constantFrom("zz", "zz/zz", "%00", "z".repeat(8000)), fc.stringMatching(/^zz[a-z0-9-]{0,20}$/)), goodAuth(context, op), noiseHeaders).map(
    ([path, extra, auth, noise]) => request("unknown path", op.method, `${path.split("?")[0]}/${extra}`, { ...noise, ...auth }, undefined)
  ))
  for (const param of op.pathParams) {
    out.push(fc.tuple(
      fc.tuple(...op.pathParams.map((p) => (p === param ? badSegment(op.template, p) : goodSegment(context, op.template, p)).map((v) => [p, v] as const))),
      goodQuery(op),
      goodAuth(context, op),
      noiseHeaders,
      anyBody(context, op)
    ).map(([values, query, auth, noise, body]) =>
      request(
        `bad or unknown ${param}`,
        op.method,
        withQuery(context.apiPath + fillPath(op.template, Object.fromEntries(values)), query),
        { ...noise, ...auth, ...body.headers },
        body.body
      )
    ))
  }
  if (op.management) {
    out.push(fc.tuple(goodPath(context, op), fc.constantFrom(...badAuthorizations(context)), noiseHeaders, anyBody(context, op)).map(
      ([path, authorization, noise, body]) =>
        request("no or bad credentials", op.method, path, { ...noise, ...(authorization === undefined ? {} : { authorization }), ...body.headers }, body.body)
    ))
    out.push(fc.tuple(goodPath(context, op), noiseHeaders, anyBody(context, op)).map(([path, noise, body]) =>
      request("key without the scope", op.method, path, {
        ...noise,
        authorization: op.method === "GET" ? context.auth.write : context.auth.read,
        ...body.headers
      }, body.body)
    ))
  }
  for (const param of op.query) {
    const bad = badQueryValues(param)
    if (bad === undefined) continue
    out.push(fc.tuple(goodPath(context, op), fc.constantFrom(...bad), goodAuth(context, op), noiseHeaders).map(([path, value, auth, noise]) => {
      const [base, query = ""] = path.split("?")
      const pairs = new URLSearchParams(query)
      pairs.delete(param.name)
      pairs.append(param.name, value)
      return request(`bad query ${param.name}`, op.method, `${base}?${pairs.toString()}`, { ...noise, ...auth }, undefined)
    }))
  }
  if (op.body !== undefined && methodsWithBody.has(op.method)) out.push(...bodySpoilers(context, op, op.body))
  return out
}

/** Spoilers in the body of `op` (whose schema is `schema`). */
const bodySpoilers = (context: FuzzContext, op: Operation, schema: JsonSchema): Array<Spoiler> => {
  const around = fc.tuple(goodPath(context, op), goodAuth(context, op), noiseHeaders)
  const send = (why: string, body: fc.Arbitrary<string | Uint8Array>, contentType: fc.Arbitrary<string | undefined> = fc.constant("application/json")) =>
    fc.tuple(around, body, contentType).map(([[path, auth, noise], b, type]) =>
      request(why, op.method, path, { ...noise, ...auth, ...(type === undefined ? {} : { "content-type": type }) }, b)
    )
  const out: Array<Spoiler> = [
    send(
      "body is not an object",
      fc.oneof(
        fc.constantFrom<unknown>(null, true, 0, 1e308, "text", [], [{}], deepArrays, new RawJson("9007199254740993")),
        fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
        fc.jsonValue({ maxDepth: 0 })
      ).map(jsonBody),
      fc.constantFrom("application/json", "application/json; charset=utf-8")
    ),
    send(
      "body is not JSON",
      fc.oneof(
        bodyAround(context, op).chain((value) => {
          const text = jsonBody(value)
          return fc.integer({ min: 1, max: text.length - 1 }).map((n) => text.slice(0, n))
        }),
        fc.constantFrom(" ", "{", "}", "{'a':1}", "NaN", "undefined", "{\"a\":1,}", "\u0000", "\ufeff{", "[".repeat(100_000)),
        fc.uint8Array({ minLength: 1, maxLength: 2048 }).filter((bytes) => !isJsonObject(bytes))
      )
    ),
    send(
      "content type is not JSON",
      fc.oneof(bodyAround(context, op).map(jsonBody), fc.constant("{}"), fc.constant("a=1&b=2")),
      fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/octet-stream", "multipart/form-data; boundary=x", "application/xml", "image/png")
    ),
    send("body over 1 MiB", fc.constant(toJson({ big: "x".repeat(1024 * 1024 + 1) })))
  ]
  // Only fields some value of which is certainly refused (a field that takes any JSON value has none).
  const properties = Object.entries(schema.properties ?? {}).filter(([, field]) => refusedValuesOf(field).length > 0)
  if (properties.length > 0) {
    out.push(send(
      "a field its schema refuses",
      fc.tuple(bodyAround(context, op), fc.constantFrom(...properties).chain(([name, field]) =>
        fc.constantFrom(...refusedValuesOf(field)).map((v) => [name, v] as const)
      )).map(([body, [name, value]]) => jsonBody({ ...body, [name]: value }))
    ))
  }
  for (const name of schema.required ?? []) {
    out.push(send(`missing ${name}`, bodyAround(context, op).map((body) => {
      const { [name]: _dropped, ...rest } = body
      return jsonBody(rest)
    })))
  }
  if (schema.additionalProperties === false) {
    const known = new Set(Object.keys(schema.properties ?? {}))
    out.push(send(
      "an unknown field",
      fc.tuple(
        bodyAround(context, op),
        fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom("ip_address", "id", "created_at", "\u0000", "__proto__")).filter((k) => !known.has(k)),
        fc.jsonValue({ maxDepth: 1 })
      ).map(([body, key, value]) => jsonBody({ ...body, [key]: value }))
    ))
  }
  // Targets named in the body: an unknown license key on the client routes, an unknown generator.
  for (const [name] of properties) {
    if (name === "license_key") {
      out.push(send("malformed license_key", fc.tuple(bodyAround(context, op), fc.oneof(
        fc.constantFrom("abc", "AAAA", "A-B-C-D-E-F-G-H-I", "\u0000", "ÄÄÄÄ-BBBB-CCCC-DDDD", hugeString),
        fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" }).filter((s) => s.trim() !== "" && !looksLikeKey(s))
      )).map(([body, key]) => jsonBody({ ...body, license_key: key }))))
      if (!op.management) {
        out.push(send("unknown license_key", fc.tuple(bodyAround(context, op), absentKey).map(([body, key]) => jsonBody({ ...body, license_key: key }))))
      }
    }
    if (name === "generator_id") {
      out.push(send("unknown generator_id", fc.tuple(bodyAround(context, op), fc.integer({ min: 1_000_000, max: Number.MAX_SAFE_INTEGER })).map(
        ([body, id]) => jsonBody({ ...body, generator_id: id, license_key: undefined })
      )))
    }
  }
  return out
}

/** Whether bytes are the UTF-8 text of a JSON object (a body the server could accept). */
const isJsonObject = (bytes: Uint8Array): boolean => {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes))
    return typeOf(value) === "object"
  } catch {
    return false
  }
}

/** Any request the server must refuse, over every operation and every spoiler that applies to it. */
export const refusedRequest = (context: FuzzContext): fc.Arbitrary<FuzzRequest> => {
  // Each operation's spoilers are built once, not for every request drawn (they are descriptions; drawing from them
  // takes the same random values either way).
  const byOperation = new Map(context.operations.map((op) => [op, fc.oneof(...spoilers(context, op))]))
  return fc.constantFrom(...context.operations).chain((op) => byOperation.get(op)!)
}

// ---- the fixed list -------------------------------------------------------------------------------------------

/** A value `schema` accepts, picked without randomness (the first member, the lowest bound, ...). */
export const exampleFor = (schema: JsonSchema): unknown => {
  if (schema.anyOf !== undefined) {
    const member = schema.anyOf.find((m) => m.type !== "null") ?? schema.anyOf[0]
    return member === undefined ? null : exampleFor(member)
  }
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0]
  const type = typeof schema.type === "string" ? schema.type : schema.type?.[0]
  switch (type) {
    case "null":
      return null
    case "boolean":
      return true
    case "integer":
    case "number":
      return Math.max(1, schema.minimum ?? 1, (schema.exclusiveMinimum ?? 0) + 1)
    case "string":
      return "x".repeat(Math.max(1, schema.minLength ?? 1))
    case "array":
      return []
    case "object":
      return Object.fromEntries((schema.required ?? []).map((name) => [name, exampleFor(schema.properties?.[name] ?? {})]))
    default:
      return null
  }
}

/**
 * The deterministic cases, made one at a time (thousands, some of 1 MiB), for every operation: each method its
 * path does not serve; each bad credential on management routes; each malformed or unknown path target; each
 * bad query value; each kind of body that is not a JSON object; and each nasty value in each body field, sent
 * where the request is refused anyway (an unknown target, an unknown license key on the client routes, an
 * unknown field on management creates) so that the server decodes the value before refusing.
 */
export function* fixedRequests(context: FuzzContext): Generator<FuzzRequest> {
  const target = (op: Operation, param: string) => context.targets[collectionOf(op.template, param)]?.[0] ?? "1"
  const absent = (op: Operation, param: string) => collectionOf(op.template, param) === "licenses" ? "0I0I-0I0I-0I0I-0I0I" : "987654321"
  const pathWith = (op: Operation, values: Record<string, string> = {}) =>
    context.apiPath + fillPath(op.template, Object.fromEntries(op.pathParams.map((p) => [p, values[p] ?? encodeURIComponent(target(op, p))])))
  const auth = (op: Operation): Record<string, string> => op.management ? { authorization: context.auth.admin } : {}
  const json = (op: Operation) => ({ ...auth(op), "content-type": "application/json" })
  const baseBody = (op: Operation): Record<string, unknown> => {
    const body = exampleFor(op.body ?? {}) as Record<string, unknown>
    if (op.body?.properties?.license_key !== undefined && !op.management && "license_key" in body) {
      body.license_key = context.targets.licenses?.[0]
    }
    return body
  }
  const bad = badAuthorizations(context)

  for (const [index, op] of context.operations.entries()) {
    const served = servedMethods(context, op.template)
    for (const method of probeMethods.filter((m) => !served.has(m))) {
      yield request("method not served", method, pathWith(op), methodsWithBody.has(method) ? json(op) : auth(op), methodsWithBody.has(method) ? "{}" : undefined)
    }
    yield request("unknown path", op.method, `${pathWith(op)}/zz`, auth(op), undefined)
    if (op.management) {
      // Every bad credential on a few routes, a rotating few on the others.
      const credentials = index % 5 === 0 ? bad : [bad[0], bad[(index % (bad.length - 1)) + 1]]
      for (const authorization of credentials) {
        const headers = authorization === undefined ? {} : { authorization }
        yield request("no or bad credentials", op.method, pathWith(op), headers, undefined)
      }
      yield request("key without the scope", op.method, pathWith(op), {
        authorization: op.method === "GET" ? context.auth.write : context.auth.read
      }, undefined)
    }
    for (const param of op.pathParams) {
      const segments = collectionOf(op.template, param) === "licenses" ? malformedKeySegments : badIdSegments
      for (const segment of [...segments, encodeURIComponent(absent(op, param))]) {
        const hasBody = methodsWithBody.has(op.method) && op.body !== undefined
        yield request(`bad or unknown ${param}`, op.method, pathWith(op, { [param]: segment }), hasBody ? json(op) : auth(op), hasBody ? toJson(baseBody(op)) : undefined)
      }
    }
    for (const param of op.query) {
      for (const value of badQueryValues(param) ?? []) {
        yield request(`bad query ${param.name}`, op.method, `${pathWith(op)}?${param.name}=${encodeURIComponent(value)}`, auth(op), undefined)
      }
    }
    if (op.body === undefined || !methodsWithBody.has(op.method)) continue

    const bodies: Array<[string, string | Uint8Array, string]> = [
      ...[null, true, 1, -0, "text", [], [{}], [baseBody(op)]].map((v): [string, string, string] => ["body is not an object", JSON.stringify(v), "application/json"]),
      ["body is not an object", deepArrays.text, "application/json"],
      ["body is not an object", "\"" + hugeString + "\"", "application/json"],
      ...[" ", "{", "{\"a\":", toJson(baseBody(op)).slice(0, -1), "{'a':1}", "NaN", "\u0000", "[".repeat(100_000)].map(
        (text): [string, string, string] => ["body is not JSON", text, "application/json"]
      ),
      ["body is not JSON", new Uint8Array([0xff, 0xfe, 0x00, 0x7b, 0x7d, 0xc3, 0x28]), "application/json"],
      ...["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"].map(
        (type): [string, string, string] => ["content type is not JSON", toJson(baseBody(op)), type]
      ),
      ["body over 1 MiB", toJson({ big: "x".repeat(1024 * 1024 + 1) }), "application/json"]
    ]
    for (const [why, body, type] of bodies) yield request(why, op.method, pathWith(op), { ...auth(op), "content-type": type }, body)

    const schema = op.body
    const properties = Object.entries(schema.properties ?? {})
    for (const name of schema.required ?? []) {
      const { [name]: _dropped, ...rest } = baseBody(op)
      yield request(`missing ${name}`, op.method, pathWith(op), json(op), toJson(rest))
    }
    if (schema.additionalProperties === false) {
      for (const [key, value] of [["zz_unknown", 1], ["ip_address", "1.2.3.4"], ["__proto__", { polluted: 1 }], ["\u0000", null]] as const) {
        yield request("an unknown field", op.method, pathWith(op), json(op), toJson(baseBody(op)).replace(/^\{/, `{${JSON.stringify(key)}:${JSON.stringify(value)}${Object.keys(baseBody(op)).length > 0 ? "," : ""}`))
      }
    }
    // Each nasty value in each field, where the request is refused whatever the value: an unknown target, an
    // unknown license key, or an unknown field next to it.
    const spoil = (body: Record<string, unknown>): { why: string; path: string; body: Record<string, unknown> } => {
      if (op.pathParams.length > 0) {
        const param = op.pathParams[0]!
        return { why: `unknown ${param}`, path: pathWith(op, { [param]: encodeURIComponent(absent(op, param)) }), body }
      }
      if (!op.management && "license_key" in (schema.properties ?? {})) {
        return { why: "unknown license_key", path: pathWith(op), body: { ...body, license_key: "0I0I-0I0I-0I0I-0I0I" } }
      }
      return { why: "an unknown field", path: pathWith(op), body: { ...body, zz_unknown: true } }
    }
    for (const [name, field] of properties) {
      const values = new Set<unknown>([...nastyValues, ...refusedValuesOf(field)])
      for (const value of values) {
        const spoiled = spoil({ ...baseBody(op), [name]: value })
        if (name === "license_key" && spoiled.why === "unknown license_key") spoiled.body.license_key = value
        const why = accepts(field, parsedOf(value)) ? `${spoiled.why}; ${name}=${toJson(value).slice(0, 30)}` : `${name} refused by its schema`
        yield request(why, op.method, spoiled.path, json(op), toJson(spoiled.body))
      }
    }
  }

  // Whole-request cases: a path over Node's 16 KiB header limit, paths outside the API base or climbing out of
  // it, an oversized request id.
  const first = context.operations.find((op) => op.template === "/health") ?? context.operations[0]!
  yield request("unknown path, 20 000 characters", "GET", `${context.apiPath}/${"z".repeat(20_000)}`, {}, undefined)
  yield request("outside the API base", "GET", "/zz", {}, undefined)
  yield request("outside the API base", "POST", "/", { "content-type": "application/json" }, "{}")
  yield request("path climbing out", "GET", `${context.apiPath}/%2e%2e/%2e%2e/%2e%2e/etc/passwd`, {}, undefined)
  yield request("unknown path, oversized request id", "GET", `${context.apiPath}/zz`, { "x-request-id": "r".repeat(8000) }, undefined)
  yield request("method not served, oversized request id", "DELETE", pathWith(first), { "x-request-id": "r".repeat(8000) }, undefined)
}
