/**
 * Checks shared by the management-route tests (licenses, machines, generators, API keys): the success and
 * error envelopes, list meta, and small helpers to set state up through the public routes.
 */
import { expect } from "vitest"
import type { TestApp } from "./App.js"

/** What `TestApp.call` answers. */
export type Reply = { readonly status: number; readonly headers: Headers; readonly body: any }

/** An ISO 8601 UTC time as the API writes it. */
export const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A license key as the default format mints it. */
export const keyFormat = /^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/

/**
 * Checks the error envelope: the status, the code, `data.status` equal to the HTTP status, nothing else at the
 * top level, a request id. Returns `data`.
 */
export const expectError = (res: Reply, status: number, code: string): any => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body).toMatchObject({ success: false, code, data: { status } })
  expect(typeof res.body.message).toBe("string")
  expect(Object.keys(res.body).sort()).toEqual(["code", "data", "message", "success"])
  expect(res.headers.get("x-request-id")).toMatch(/\S/)
  return res.body.data
}

/** Checks a 400 `rest_invalid_param` whose `data.params` names exactly these fields; returns the params. */
export const expectInvalid = (res: Reply, ...fields: ReadonlyArray<string>): Record<string, string> => {
  const data = expectError(res, 400, "rest_invalid_param")
  expect(Object.keys(data.params ?? {}).sort(), JSON.stringify(data)).toEqual([...fields].sort())
  for (const field of fields) expect(typeof data.params[field]).toBe("string")
  return data.params
}

/** Checks the success envelope with its `meta` (`{}` unless given) and returns `data`. */
export const expectOk = (res: Reply, status = 200, meta: Record<string, unknown> = {}): any => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body.success).toBe(true)
  expect(res.body.meta).toEqual(meta)
  expect(Object.keys(res.body).sort()).toEqual(["data", "meta", "success"])
  return res.body.data
}

/** Checks that a request succeeded (2xx, `success: true`), whatever its data. */
export const expectSuccess = (res: Reply): void => {
  expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(200)
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
  expect(res.body.success).toBe(true)
}

/** Checks a list: its items under `key`, and the list meta. Returns the items. */
export const expectList = (
  res: Reply,
  key: string,
  meta: { readonly total: number; readonly page?: number; readonly per_page?: number }
): Array<any> => {
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  expect(res.body.success).toBe(true)
  expect(Object.keys(res.body.data)).toEqual([key])
  const page = meta.page ?? 1
  const perPage = meta.per_page ?? 20
  expect(res.body.meta).toEqual({
    total: meta.total,
    page,
    per_page: perPage,
    total_pages: meta.total === 0 ? 0 : Math.ceil(meta.total / perPage)
  })
  return res.body.data[key]
}

let counter = 0

/**
 * A number no other call in this test process got (e.g. a `product_id` that tags the licenses of one test, so
 * list filters see only them).
 */
export const unique = (): number => 1000 + ++counter

/** A license created through POST /licenses; returns its `data`. */
export const createLicense = async (app: TestApp, body: Record<string, unknown> = {}): Promise<any> =>
  expectOk(await app.call("POST", "/licenses", { body }), 201)

/** A machine activated through the public POST /activate; returns its `data`. */
export const activate = async (
  app: TestApp,
  key: string,
  fingerprint: string,
  extra: Record<string, unknown> = {}
): Promise<any> =>
  expectOk(await app.call("POST", "/activate", { body: { license_key: key, fingerprint, ...extra }, auth: null }), 201)

/** `Basic base64(key:secret)` */
export const basic = (consumerKey: string, consumerSecret: string): string =>
  `Basic ${Buffer.from(`${consumerKey}:${consumerSecret}`).toString("base64")}`

/** The payload of a signed token (`base64url(json).base64url(signature)`). */
export const tokenPayload = (token: string): any => JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8"))

/** ISO time `days` from now (negative: in the past). */
export const daysFromNow = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString()
