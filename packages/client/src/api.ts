/**
 * The typed client of every lm/v1 route, for Effect users: derived by `HttpApiClient` from the one API
 * definition (`@lm/http/api`), so a route or schema change on the server is a type error here. Fetch only.
 * The one file of the client that imports the API definition: the rest takes its types from here.
 */
import { Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api } from "@lm/http/api"

export type { ActivatedMachine, CrlResponse, DeactivateResponse, HeartbeatResponse, PublicKeyResponse, ValidateResponse } from "@lm/http/api"

/** Where the server is and who calls it. */
export interface ConnectionOptions {
  /** The server's base URL, e.g. `https://licensing.example.com` (the API is at `{baseUrl}{restRoot}/lm/v1`). */
  readonly baseUrl: string
  /** The server's `LM_REST_ROOT` (default `/api`). */
  readonly restRoot?: string
  /** An API key, for the management routes (HTTP Basic); the public routes need none. */
  readonly credentials?: { readonly consumerKey: string; readonly consumerSecret: string }
}

/** `{baseUrl}{restRoot}`: the prefix of the API definition's paths (which start with `/lm/v1`). */
export const restBase = (options: ConnectionOptions): string =>
  `${options.baseUrl.replace(/\/+$/, "")}${(options.restRoot ?? "/api").replace(/\/+$/, "")}`

/** The typed client: one group per API group (`client`, `licenses`, `machines`, ...), one method per route. */
export type LmApiClient = HttpApiClient.ForApi<typeof Api>

/** The envelope's `data` of a route's success. */
type DataOf<F> = F extends (...args: never) => Effect.Effect<infer A, infer _E, infer _R> ? A extends { readonly data: infer D } ? D : never : never

/** The answer of `GET /updates/check`. */
export type UpdateCheckResponse = DataOf<LmApiClient["updates"]["check"]>

/** A release as the server describes it (`id`, `version`, `channel`, `filename`, `size`, `sha256`, ...). */
export type Release = NonNullable<UpdateCheckResponse["release"]>

/** Builds the typed client on the `HttpClient` in context. */
export const makeApiClient = (options: ConnectionOptions): Effect.Effect<LmApiClient, never, HttpClient.HttpClient> => {
  const credentials = options.credentials
  return HttpApiClient.make(Api, {
    baseUrl: restBase(options),
    ...(credentials === undefined ? {} : {
      transformClient: HttpClient.mapRequest(HttpClientRequest.basicAuth(credentials.consumerKey, credentials.consumerSecret))
    })
  })
}

/** The typed client as a service; `LmApi.layer(options)` builds it on `fetch`. */
export class LmApi extends Context.Service<LmApi, LmApiClient>()("@lm/client/LmApi") {
  static readonly layer = (options: ConnectionOptions): Layer.Layer<LmApi> =>
    Layer.effect(LmApi, makeApiClient(options)).pipe(Layer.provide(FetchHttpClient.layer))
}
