/**
 * The typed client of every lm/v1 route, derived by `HttpApiClient` from the one API definition: a route or schema
 * change on the server is a type error in every program that calls it. Fetch only (give it `FetchHttpClient`);
 * `@lm/client` builds its Promise API and licensed-app helpers on it.
 */
import type { Effect } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api, apiPath } from "./Api.js"

/** Where the server is and who calls it. */
export interface ConnectionOptions {
  /**
   * The server's base URL, e.g. `https://licensing.example.com` (the API is at `{baseUrl}{restRoot}/lm/v1`), or the
   * API base itself as the server logs it at start (`https://licensing.example.com/api/lm/v1`; `restRoot` is then
   * read from it).
   */
  readonly baseUrl: string
  /** The server's `LM_REST_ROOT` (default `/api`). */
  readonly restRoot?: string
  /** An API key, for the management routes (HTTP Basic); the public routes need none. */
  readonly credentials?: { readonly consumerKey: string; readonly consumerSecret: string }
}

/**
 * `{baseUrl}{restRoot}`: the prefix of the API definition's paths (which start with `/lm/v1`). A `baseUrl` that is
 * already the API base (ends with `/lm/v1`) gives the part before it.
 */
export const restBase = (options: ConnectionOptions): string => {
  const base = options.baseUrl.replace(/\/+$/, "")
  if (base.endsWith(apiPath)) return base.slice(0, -apiPath.length)
  return `${base}${(options.restRoot ?? "/api").replace(/\/+$/, "")}`
}

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
