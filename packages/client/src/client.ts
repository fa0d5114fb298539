/**
 * The Promise API, for everyone who does not use Effect: `createClient({ baseUrl })` and one method per public
 * route, each resolving with the envelope's `data` as a plain object or rejecting with an {@link LmError}. It is
 * the typed Effect client (`api.ts`) underneath, so requests and answers are checked against the API definition.
 */
import { Effect } from "effect"
import { FetchHttpClient, HttpClientError } from "effect/http"
import {
  type ActivatedMachine,
  type ConnectionOptions,
  type CrlResponse,
  type DeactivateResponse,
  type HeartbeatResponse,
  type LmApiClient,
  makeApiClient,
  type PublicKeyResponse,
  type UpdateCheckResponse,
  type ValidateResponse
} from "./api.js"
import { fromEnvelope, LmError } from "./errors.js"

type ClientRoutes = LmApiClient["client"]
type PayloadOf<K extends "validate" | "activate" | "deactivate" | "heartbeat"> = ClientRoutes[K] extends
  (request: infer R) => unknown ? R extends { readonly payload: infer P } ? P : never : never

/** Body of `validate`: `license_key`, optional `fingerprint` and `nonce`. */
export type ValidateInput = PayloadOf<"validate">
/** Body of `activate`: `license_key`, `fingerprint`, optional `name`, `hostname`, `platform`, `app_version`, `components`, `meta`. */
export type ActivateInput = PayloadOf<"activate">
/** Body of `deactivate`: `license_key` and `fingerprint` or `machine_id`. */
export type DeactivateInput = PayloadOf<"deactivate">
/** Body of `heartbeat`: `license_key`, `fingerprint`, optional `app_version`. */
export type HeartbeatInput = PayloadOf<"heartbeat">
/** Query of `updates/check`: `license_key`, `version`, optional `product_id`, `channel`, `fingerprint`. */
export type UpdateCheckInput = LmApiClient["updates"]["check"] extends (request: { readonly query: infer Q }) => unknown ? Q : never

export type { ActivatedMachine, CrlResponse, DeactivateResponse, HeartbeatResponse, PublicKeyResponse, UpdateCheckResponse, ValidateResponse }

/** The public routes as Promises. */
export interface LmClient {
  /** `POST /validate`: always resolves for an existing key; `valid` and `code` say whether it may be used. */
  validate(input: ValidateInput): Promise<ValidateResponse>
  /** `POST /activate`: the machine with its signed `certificate`. */
  activate(input: ActivateInput): Promise<ActivatedMachine>
  /** `POST /deactivate`. */
  deactivate(input: DeactivateInput): Promise<DeactivateResponse>
  /** `POST /heartbeat`: renews a floating lease; rejects with `machine_inactive` when the seat is gone. */
  heartbeat(input: HeartbeatInput): Promise<HeartbeatResponse>
  /** `GET /crl`: the signed revocation list. */
  crl(): Promise<CrlResponse>
  /** `GET /public-key`: the keys that verify signed tokens (`keys` lists every accepted one). */
  publicKeys(): Promise<PublicKeyResponse>
  /** `GET /updates/check`: whether a newer release is offered to this license, with a short-lived `download_url`. */
  checkForUpdate(input: UpdateCheckInput): Promise<UpdateCheckResponse>
  /** `GET /health`. */
  health(): Promise<{ readonly status: string; readonly storage: string; readonly version: string }>
  /** Runs an Effect on the typed client of every route (management routes need `credentials`). */
  run<A, E>(f: (api: LmApiClient) => Effect.Effect<A, E>): Promise<A>
}

const isObject = (u: unknown): u is object => typeof u === "object" && u !== null

/**
 * Throws `invalid_options` unless `baseUrl` is an http(s) URL (an origin or the API base): absolute, or in a browser
 * relative to the page.
 */
export const checkBaseUrl = (baseUrl: string): void => {
  let url: URL | undefined
  try {
    // In a browser a base relative to the page (`""`, `/`) is the page's origin, as fetch reads it.
    url = new URL(baseUrl, (globalThis as { readonly location?: { readonly href: string } }).location?.href)
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:") || url.search !== "" || url.hash !== "") {
    throw new LmError(
      "invalid_options",
      0,
      `baseUrl must be the server's origin (e.g. https://licensing.example.com) or the API base it logs at start ` +
        `(e.g. https://licensing.example.com/api/lm/v1); got ${JSON.stringify(baseUrl)}`
    )
  }
}

/** Any failure of a call as an {@link LmError}: the server's envelope when there is one. */
const toLmError = (error: unknown): Effect.Effect<never, LmError> => {
  if (error instanceof LmError) return Effect.fail(error)
  // A decoded envelope error: its `message` is an Error's own non-enumerable property, so it is read by name.
  const envelope = isObject(error)
    ? fromEnvelope({
      success: Reflect.get(error, "success"),
      code: Reflect.get(error, "code"),
      message: Reflect.get(error, "message"),
      data: Reflect.get(error, "data")
    })
    : undefined
  if (envelope !== undefined) return Effect.fail(envelope)
  if (HttpClientError.isHttpClientError(error)) {
    const reason = error.reason
    if (reason._tag === "StatusCodeError") {
      const status = reason.response.status
      return reason.response.json.pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((body) =>
          Effect.fail(fromEnvelope(body) ?? new LmError("invalid_response", status, `unexpected HTTP ${status}`))
        )
      )
    }
    if (reason._tag === "TransportError" || reason._tag === "InvalidUrlError") {
      return Effect.fail(new LmError("network_error", 0, error.message))
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return Effect.fail(new LmError("invalid_response", 0, message))
}

/**
 * A client of the server at `baseUrl`: its origin (`restRoot` defaults to `/api`) or the API base the server logs
 * (`https://licensing.example.com/api/lm/v1`). Anything else throws an {@link LmError} `invalid_options` saying so.
 */
export const createClient = (options: ConnectionOptions): LmClient => {
  checkBaseUrl(options.baseUrl)
  const api = Effect.runSync(makeApiClient(options).pipe(Effect.provide(FetchHttpClient.layer)))
  const call = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    Effect.runPromise(effect.pipe(Effect.catch(toLmError)))
  const data = <A, E>(effect: Effect.Effect<{ readonly data: A }, E>): Promise<A> =>
    call(Effect.map(effect, (envelope) => envelope.data))
  return {
    validate: (payload) => data(api.client.validate({ payload })),
    activate: (payload) => data(api.client.activate({ payload })),
    deactivate: (payload) => data(api.client.deactivate({ payload })),
    heartbeat: (payload) => data(api.client.heartbeat({ payload })),
    crl: () =>
      call(api.client.crl({ headers: {} })).then((answer) => {
        if (answer === undefined || answer === null) throw new LmError("invalid_response", 304, "no list in a 304 answer")
        return answer.data
      }),
    publicKeys: () => data(api.client.publicKey()),
    checkForUpdate: (query) => data(api.updates.check({ query })),
    health: () => data(api.system.health()),
    run: (f) => call(f(api))
  }
}
