/**
 * The console's one door to the server: the typed client that effect's `HttpApiClient` derives from the lm/v1
 * API definition, so every request and answer is checked against the same schemas as the server's (no request is
 * written by hand). This is the only module that imports the API definition (and the domain's lists of names);
 * the types of the objects the pages show are read off the client here.
 *
 * Requests go to this origin with the signed-in key as HTTP Basic, and `credentials: "omit"`, so that a 401
 * (sent with `WWW-Authenticate: Basic`) never makes the browser open its own sign-in box; the console returns to
 * its sign-in page instead. An upload reports its progress through XMLHttpRequest (fetch cannot).
 */
import { Api } from "@lm/api"
import { Model } from "@lm/domain/core"
import { Effect, Schema, SchemaIssue } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"

/** Every lm/v1 route, one method per route, grouped as the API definition groups them. */
export type ConsoleApi = HttpApiClient.ForApi<typeof Api>

/** An API key as the console holds it for the tab. */
export interface Credentials {
  readonly consumerKey: string
  readonly consumerSecret: string
}

/** `{rest_root}`, which the server writes into the page's `<meta name="lm-rest-root">` (default `/api`). */
export const restRoot = (): string =>
  document.querySelector<HTMLMetaElement>('meta[name="lm-rest-root"]')?.content.replace(/\/+$/, "") ?? "/api"

/**
 * The typed client of the server that served the console, calling as `credentials` (none for public routes). Each
 * group of routes is derived on first use: deriving the whole API at once costs a page load about 200 ms more.
 */
export const makeApi = (credentials: Credentials | undefined): ConsoleApi => {
  const httpClient = Effect.runSync(
    Effect.map(HttpClient.HttpClient, (client) =>
      credentials === undefined
        ? client
        : HttpClient.mapRequest(client, HttpClientRequest.basicAuth(credentials.consumerKey, credentials.consumerSecret))
    ).pipe(Effect.provide(FetchHttpClient.layer))
  )
  const baseUrl = `${location.origin}${restRoot()}`
  const groups = new Map<string, unknown>()
  return new Proxy({} as ConsoleApi, {
    get: (_target, name) => {
      // Only the API's groups (a probe such as a promise's `then` finds nothing).
      if (typeof name !== "string" || !Object.hasOwn(Api.groups, name)) return undefined
      if (!groups.has(name)) {
        groups.set(name, Effect.runSync(HttpApiClient.group(Api, { group: name as keyof ConsoleApi, httpClient, baseUrl })))
      }
      return groups.get(name)
    }
  })
}

/** What the server (or the way to it) answered instead of success, in words a person can act on. */
export class ConsoleError extends Error {
  /** The envelope's `code` (`license_exists`, `rest_invalid_param`, ...), or `network_error`, `invalid_input`. */
  readonly code: string
  /** The HTTP status; 0 when no answer came. */
  readonly status: number
  /** Field errors: the envelope's `data.params` (`{"url": "must be https"}`). */
  readonly params: Readonly<Record<string, string>>
  constructor(code: string, status: number, message: string, params: Readonly<Record<string, string>> = {}) {
    super(message)
    this.code = code
    this.status = status
    this.params = params
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** The error envelope's fields, when `body` is one. */
const fromEnvelope = (body: unknown): ConsoleError | undefined => {
  if (!isRecord(body) || body["success"] !== false || typeof body["code"] !== "string") return undefined
  const data = isRecord(body["data"]) ? body["data"] : {}
  const params = isRecord(data["params"]) ? data["params"] as Record<string, string> : {}
  return new ConsoleError(body["code"], typeof data["status"] === "number" ? data["status"] : 0, String(body["message"] ?? body["code"]), params)
}

/** A payload that does not fit the API's schema, caught before it is sent: its field errors. */
const fromSchemaError = (error: Schema.SchemaError): ConsoleError => {
  const params: Record<string, string> = {}
  for (const issue of SchemaIssue.makeFormatterStandardSchemaV1()(error.issue).issues) {
    const path = (issue.path ?? []).map((p) => typeof p === "object" && p !== null && "key" in p ? String(p.key) : String(p))
    // An element of a list (`entitlements[2]`) is reported beside its list's field.
    params[path.findLast((p) => !/^\d+$/.test(p)) ?? "body"] ??= issue.message
  }
  return new ConsoleError("invalid_input", 400, `Invalid input: ${Object.keys(params).join(", ")}.`, params)
}

/** Any failure of a call as a {@link ConsoleError}. */
const toConsoleError = (error: unknown): Effect.Effect<never, ConsoleError> => {
  if (error instanceof ConsoleError) return Effect.fail(error)
  const envelope = fromEnvelope(isRecord(error) ? { ...error, success: Reflect.get(error, "success") } : undefined)
  if (envelope !== undefined) return Effect.fail(envelope)
  if (Schema.isSchemaError(error)) return Effect.fail(fromSchemaError(error))
  if (HttpClientError.isHttpClientError(error)) {
    const reason = error.reason
    if (reason._tag === "StatusCodeError") {
      const status = reason.response.status
      return reason.response.json.pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((body) => Effect.fail(fromEnvelope(body) ?? new ConsoleError("invalid_response", status, `The server answered HTTP ${status}.`)))
      )
    }
    if (reason._tag === "TransportError") {
      return Effect.fail(new ConsoleError("network_error", 0, "The server could not be reached. Check the connection and try again."))
    }
  }
  return Effect.fail(new ConsoleError("invalid_response", 0, error instanceof Error ? error.message : String(error)))
}

/** Called with every 401, once per failing call (the session has ended or the key was revoked). */
let onUnauthorized: (error: ConsoleError) => void = () => {}
export const setUnauthorizedHandler = (handler: (error: ConsoleError) => void) => {
  onUnauthorized = handler
}

/** Upload progress: bytes sent so far and in all. */
export type Progress = (sent: number, total: number) => void

/**
 * `fetch` over XMLHttpRequest, for the one call whose progress a person watches (a release upload); the rest of
 * the answer is built as fetch's would be, so the typed client reads it the same way.
 */
const fetchWithProgress = (progress: Progress): typeof globalThis.fetch => (input, init) =>
  new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open(init?.method ?? "GET", String(input))
    xhr.responseType = "arraybuffer"
    new Headers(init?.headers).forEach((value, name) => xhr.setRequestHeader(name, value))
    xhr.upload.onprogress = (event) => progress(event.loaded, event.lengthComputable ? event.total : 0)
    xhr.onload = () => {
      const headers = new Headers()
      for (const line of xhr.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
        const at = line.indexOf(":")
        if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim())
      }
      resolve(new Response(xhr.status === 204 || xhr.status === 304 ? null : xhr.response, { status: xhr.status, headers }))
    }
    xhr.onerror = () => reject(new TypeError("network error"))
    xhr.onabort = () => reject(new DOMException("aborted", "AbortError"))
    init?.signal?.addEventListener("abort", () => xhr.abort())
    xhr.send((init?.body ?? null) as XMLHttpRequestBodyInit | null)
  })

/**
 * Runs one call of the typed client: resolves with its answer or rejects with a {@link ConsoleError}; a 401 also
 * goes to the unauthorized handler. `signal` abandons it (a page left before its data came).
 */
export const call = <A, E>(
  effect: Effect.Effect<A, E>,
  options: { readonly signal?: AbortSignal | undefined; readonly progress?: Progress | undefined } = {}
): Promise<A> => {
  const withInit = effect.pipe(
    Effect.provideService(FetchHttpClient.RequestInit, { credentials: "omit" }),
    options.progress === undefined ? (e) => e : Effect.provideService(FetchHttpClient.Fetch, fetchWithProgress(options.progress))
  )
  return Effect.runPromise(withInit.pipe(Effect.catch(toConsoleError)), { signal: options.signal }).catch((error: unknown) => {
    if (error instanceof ConsoleError && error.status === 401) onUnauthorized(error)
    throw error
  })
}

/** The `data` of an envelope answer, typed by its route. */
type DataOf<F> = F extends (...args: any) => Effect.Effect<infer A, any, any> ? A extends { readonly data: infer D } ? D : never : never

export type License = DataOf<ConsoleApi["licenses"]["get"]>
export type LicenseSummary = DataOf<ConsoleApi["licenses"]["list"]>["licenses"][number]
export type Machine = DataOf<ConsoleApi["machines"]["get"]>
export type Generator = DataOf<ConsoleApi["generators"]["get"]>
export type Policy = DataOf<ConsoleApi["policies"]["get"]>
export type Subscription = DataOf<ConsoleApi["subscriptions"]["get"]>
export type Renewal = DataOf<ConsoleApi["subscriptions"]["renewals"]>["renewals"][number]
export type Release = DataOf<ConsoleApi["releases"]["list"]>["releases"][number]
export type Webhook = DataOf<ConsoleApi["webhooks"]["get"]>
export type Delivery = DataOf<ConsoleApi["webhooks"]["deliveries"]>["deliveries"][number]
export type ApiKey = DataOf<ConsoleApi["api-keys"]["list"]>["api_keys"][number]
export type Overview = DataOf<ConsoleApi["analytics"]["overview"]>
export type Series = DataOf<ConsoleApi["analytics"]["validations"]>
export type Anomaly = DataOf<ConsoleApi["analytics"]["anomalies"]>["anomalies"][number]
/** The list meta of every paged answer. */
export interface ListMeta {
  readonly total: number
  readonly page: number
  readonly per_page: number
  readonly total_pages: number
}

/** The lists of names the console offers in its filters and forms: the domain's own (one definition per fact). */
export const names = {
  licenseStatuses: Model.licenseStatuses,
  licenseSortColumns: Model.licenseSortColumns,
  machineStatuses: Model.machineStatuses,
  overageStrategies: Model.overageStrategies,
  subscriptionStatuses: Model.subscriptionStatuses,
  billingPeriods: Model.billingPeriods,
  billingProviders: Model.billingProviders,
  billingEventOutcomes: Model.billingEventOutcomes,
  releaseChannels: Model.releaseChannels,
  webhookEventTypes: Model.webhookEventTypes,
  apiKeyScopes: Model.apiKeyScopes,
  auditActorTypes: Model.auditActorTypes,
  analyticsPeriods: Model.analyticsPeriods,
  analyticsIntervals: Model.analyticsIntervals
} as const

export type Scope = (typeof Model.apiKeyScopes)[number]
