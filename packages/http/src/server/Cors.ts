/**
 * CORS for browser clients (CONTRACT §2), one policy for both request paths: the global middleware
 * (`Routing.requestEnvelope`) answers preflights and adds the headers to every response of the Effect stack;
 * the fast path (`FastPath.ts`) adds the same headers to its answers (it never takes an `OPTIONS`).
 *
 * - Public routes (every endpoint of the API without the `Authentication` middleware, plus `openapi.json`):
 *   any origin when `LM_CORS_ORIGINS` is unset (`Access-Control-Allow-Origin: *`), else the listed origins
 *   (echoed, with `Vary: Origin`).
 * - Management routes (and anything else): only the listed origins, never `*`; with the setting unset, none.
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) of a known path from an allowed
 *   origin is 204 with `-Allow-Origin`, `-Allow-Methods` (the path's methods), `-Allow-Headers` (a base list,
 *   `Authorization` on management routes, plus the well-formed names the browser asks for) and `-Max-Age`;
 *   from an origin not allowed it is 403 `rest_forbidden` (the browser then refuses the call, and the console
 *   shows why). An `OPTIONS` that is not a preflight (no `Access-Control-Request-Method`) is left to the
 *   routes, where an authenticated one is a read.
 * - When the setting is set, every response carries `Vary: Origin` (its CORS headers depend on the origin), so
 *   that a shared cache (the CRL is `Cache-Control: public`) never serves one origin's answer to another.
 */
import { wplmRoutes } from "../handlers/WplmAnswers.js"
import { FindMyWay, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import { Api, Authentication, openApiPath } from "@lm/api"
import { envelope } from "./Responses.js"

/** Request headers as either request path has them (lower-case names). */
type RequestHeaders = { readonly [name: string]: string | ReadonlyArray<string> | undefined }

/** The CORS policy of a server. */
export interface CorsPolicy {
  /**
   * The CORS headers of the response to a request on `url` whose `Origin` header is `origin`, or undefined
   * when there are none (no `Origin` and the setting unset: the hot path pays one comparison).
   */
  readonly headersFor: (url: string, origin: string | undefined) => Readonly<Record<string, string>> | undefined
  /**
   * The answer to a preflight of a known path (`allowedMethods` its methods, from the route table), or
   * undefined when the request is no preflight or the path is unknown (the router answers it).
   */
  readonly preflight: (
    method: string,
    url: string,
    headers: RequestHeaders,
    allowedMethods: (url: string) => ReadonlyArray<string>
  ) => HttpServerResponse.HttpServerResponse | undefined
}

/** What the policy is made of: `HttpSettings`' rest root and `LM_CORS_ORIGINS`. */
export interface CorsOptions {
  readonly restRoot: string
  readonly corsOrigins: ReadonlyArray<string> | undefined
}

/**
 * The paths (under `{rest_root}`) of the public routes: the endpoints of the API definition that do not
 * authenticate, and the OpenAPI document served beside them. The API definition is the one list.
 */
export const publicPaths = (): ReadonlyArray<string> => {
  // The WPLM compatibility namespace's routes are public too (CONTRACT §17; served only with `LM_WPLM_COMPAT=1`).
  const paths: Array<string> = [openApiPath, ...Object.values(wplmRoutes)]
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => {
      if (![...middleware].some((m) => m.key === Authentication.key)) paths.push(endpoint.path)
    }
  })
  return paths
}

/** How long a browser may keep a preflight's answer: two hours, the most Chromium keeps. */
export const preflightMaxAgeSeconds = 7200

/** Request headers every allowed preflight allows; management routes add `Authorization`. */
const baseAllowedHeaders = ["content-type", "if-none-match", "x-request-id"]

/**
 * Response headers a browser script may read besides the safelisted ones (a download's name and range too, so that
 * a web client can save and resume it).
 */
const exposedHeaders = "ETag, Retry-After, WWW-Authenticate, Allow, X-Request-Id, Content-Disposition, Content-Range, Accept-Ranges"

/** An HTTP header name (RFC 9110 token). */
const headerName = /^[!#$%&'*+.^_`|~0-9a-z-]+$/

/** The base list plus the well-formed names of `Access-Control-Request-Headers` (at most 32 taken). */
const allowedHeaders = (base: ReadonlyArray<string>, requested: string | undefined): string => {
  const names = new Set(base)
  if (requested !== undefined) {
    for (const name of requested.split(",").slice(0, 32)) {
      const trimmed = name.trim().toLowerCase()
      if (headerName.test(trimmed)) names.add(trimmed)
    }
  }
  return [...names].join(", ")
}

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/** The policy for `options` (see the module comment). */
export const makeCorsPolicy = (options: CorsOptions): CorsPolicy => {
  const listed = options.corsOrigins === undefined ? undefined : new Set(options.corsOrigins)
  const publicRouter = FindMyWay.make<true>()
  for (const path of publicPaths()) {
    publicRouter.on("GET", `${options.restRoot}${path}` as FindMyWay.PathInput, true)
  }
  const isPublic = (url: string): boolean => publicRouter.find("GET", url) !== undefined

  /** The origin to allow (`*` or the origin itself), or undefined when it is not allowed. */
  const allowedOrigin = (url: string, origin: string): string | undefined => {
    if (listed !== undefined) return listed.has(origin) ? origin : undefined
    return isPublic(url) ? "*" : undefined
  }

  const varyOnly: Readonly<Record<string, string>> = { vary: "Origin" }

  const headersFor: CorsPolicy["headersFor"] = (url, origin) => {
    if (origin === undefined) return listed === undefined ? undefined : varyOnly
    const allowed = allowedOrigin(url, origin)
    if (allowed === undefined) return listed === undefined ? undefined : varyOnly
    return listed === undefined
      ? { "access-control-allow-origin": allowed, "access-control-expose-headers": exposedHeaders }
      : { "access-control-allow-origin": allowed, "access-control-expose-headers": exposedHeaders, vary: "Origin" }
  }

  const preflight: CorsPolicy["preflight"] = (method, url, headers, allowedMethods) => {
    if (method !== "OPTIONS") return undefined
    const origin = single(headers.origin)
    const requestedMethod = single(headers["access-control-request-method"])
    if (origin === undefined || requestedMethod === undefined) return undefined
    const methods = allowedMethods(url)
    if (methods.length === 0) return undefined
    const allowed = allowedOrigin(url, origin)
    if (allowed === undefined) {
      return envelope(
        403,
        "rest_forbidden",
        isPublic(url)
          ? `Cross-origin requests from ${origin} are not allowed: the origin is not listed in LM_CORS_ORIGINS.`
          : `Cross-origin requests to management routes are allowed only from the origins listed in LM_CORS_ORIGINS; ${origin} is not one of them.`
      )
    }
    const base = isPublic(url) ? baseAllowedHeaders : ["authorization", ...baseAllowedHeaders]
    return HttpServerResponse.empty({
      status: 204,
      headers: {
        "access-control-allow-origin": allowed,
        "access-control-allow-methods": methods.join(", "),
        "access-control-allow-headers": allowedHeaders(base, single(headers["access-control-request-headers"])),
        "access-control-max-age": String(preflightMaxAgeSeconds),
        ...(listed === undefined ? {} : { vary: "Origin" })
      }
    })
  }

  return { headersFor, preflight }
}
