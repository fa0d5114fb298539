/**
 * The typed client of every lm/v1 route, derived by `HttpApiClient` from the one API definition: a route or schema
 * change on the server is a type error in every program that calls it. Fetch only (give it `FetchHttpClient`);
 * `@lm/client` builds its Promise API and licensed-app helpers on it.
 */
import type { Effect } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api } from "./Api.js"

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
