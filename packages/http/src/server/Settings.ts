/**
 * The HTTP adapter's settings (CONTRACT §2, §13), given with {@link HttpSettings.layer} (the bundled server reads
 * them from the environment: `apps/server`, `settings/Http.ts`).
 */
import * as tls from "node:tls"
import { Context, Data, Effect, Layer } from "effect"
import { apiPath, version } from "@lm/api"
import type { Model } from "@lm/domain"
import type { IpAllowList } from "./ClientIp.js"

/** The settings the routes and middlewares read. */
export interface Settings {
  /** `LM_REST_ROOT`, e.g. `/api` (default) or `/wp-json`; `""` serves the API at the root. */
  readonly restRoot: string
  /** How many trusted proxies append to `X-Forwarded-For` (`LM_TRUST_PROXY`); 0 ignores the header. */
  readonly trustProxyHops: number
  /** `LM_ADMIN_ALLOWED_IPS`: when set, management routes only answer these addresses. */
  readonly adminAllowedIps: IpAllowList | undefined
  /** The largest request body read, in bytes (1 MiB). */
  readonly maxBodyBytes: number
  /**
   * `LM_IMPORT_MAX_BODY_BYTES` (default 64 MiB): the largest body of `POST /licenses/import` (an endpoint marked
   * `BulkBody`), which carries up to 10,000 licenses with their machines; every other body keeps `maxBodyBytes`.
   */
  readonly maxImportBodyBytes: number
  /** The version reported by `/health` and the OpenAPI document. */
  readonly version: string
  /**
   * `LM_HTTP_FAST_PATH` (default on): answer the hot client writes (validate, activate, deactivate, heartbeat)
   * in front of the Effect HTTP stack (see `FastPath.ts`); off sends every request through the stack.
   */
  readonly fastPath: boolean
  /** `LM_MAX_CONNECTIONS` (default 1024): open connections at most; one more is closed at once. */
  readonly maxConnections: number
  /** `LM_MAX_CONNECTIONS_PER_IP` (default 256): open connections at most from one socket address. */
  readonly maxConnectionsPerIp: number
  /** `LM_HEADERS_TIMEOUT_SECONDS` (default 10): time for a request's line and headers to arrive. */
  readonly headersTimeoutSeconds: number
  /** `LM_BODY_TIMEOUT_SECONDS` (default 10): further time for its body, in all (every route but the release upload). */
  readonly bodyTimeoutSeconds: number
  /**
   * `LM_UPLOAD_IDLE_TIMEOUT_SECONDS` (default 30): the release upload (`POST /releases`, multipart) is not bound by
   * the body timeout, but is cut off (408, nothing kept) once no byte has arrived for this long.
   */
  readonly uploadIdleTimeoutSeconds: number
  /**
   * `LM_UPLOAD_TIMEOUT_SECONDS` (default 10,800: 3 h, 512 MiB at 400 kbit/s): the longest a release upload may take
   * in all (then 408, nothing kept). It bounds how long an upload's unfinished file (or S3 multipart upload) can
   * be in the works, so the artifact store takes an older one for the leftover of a process killed midway and
   * removes it (at start, then once per this period).
   */
  readonly uploadTimeoutSeconds: number
  /** `LM_TLS_CERT`, `LM_TLS_KEY`: the PEM texts of the files they name; the server then speaks HTTPS itself. */
  readonly tls: { readonly cert: string; readonly key: string } | undefined
  /**
   * `LM_FORCE_HTTPS`: refuse (403 `rest_forbidden`) every request that did not arrive over TLS, directly or, with
   * `LM_TRUST_PROXY`, per `X-Forwarded-Proto: https`.
   */
  readonly forceHttps: boolean
  /**
   * `LM_CORS_ORIGINS`: the browser origins allowed cross-origin (see `Cors.ts`). Unset (undefined): public routes
   * allow any origin (`*`), management routes none; set: both allow exactly these.
   */
  readonly corsOrigins: ReadonlyArray<string> | undefined
  /**
   * `LM_MAX_ARTIFACT_BYTES` (default 512 MiB): the largest release artifact an upload may carry; the one route
   * whose body is not bound by `maxBodyBytes` (it streams to the artifact store).
   */
  readonly maxArtifactBytes: number
  /**
   * The webhook signing secret of each billing provider whose events `POST {api_base}/billing/{provider}/events`
   * takes (`LM_STRIPE_WEBHOOK_SECRET`, `LM_PADDLE_WEBHOOK_SECRET`, `LM_LEMONSQUEEZY_WEBHOOK_SECRET`); a provider
   * without one is off (404 `rest_no_route`).
   */
  readonly billingSecrets: Readonly<Partial<Record<Model.BillingProvider, string>>>
  /**
   * `LM_WPLM_COMPAT` (default off): the public client routes are also served at `{rest_root}/wplm/v1/` in the
   * shapes the WPLM client libraries read (CONTRACT §17, `handlers/WplmAnswers.ts`).
   */
  readonly wplmCompat: boolean
}

/** Where the server listens. */
export interface Listen {
  /** `HOST`, default `127.0.0.1`. */
  readonly host: string
  /** `PORT`, default 8080; 0 picks a free port. */
  readonly port: number
}

/** 512 MiB: the default limit of a release artifact (CONTRACT §9). */
export const defaultMaxArtifactBytes = 512 * 1024 * 1024

/** 1 MiB: the contract's body limit. */
export const defaultMaxBodyBytes = 1024 * 1024

/**
 * 64 MiB: the default limit of an import's body. 10,000 licenses as `GET /licenses/export` writes them, each with
 * three machines, take about 20 MB (`licenses-import.test.ts` imports such an export in one call).
 */
export const defaultMaxImportBodyBytes = 64 * 1024 * 1024

/** `/api` to `/api`, `wp-json/` to `/wp-json`, `/` and `` to ``. */
export const normalizeRestRoot = (root: string): string => {
  const trimmed = root.trim().replace(/\/+$/, "")
  if (trimmed === "") return ""
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** `api_base` for a server address, e.g. `http://127.0.0.1:8080/api/lm/v1`. */
export const apiBase = (origin: string, settings: Pick<Settings, "restRoot">): string =>
  `${origin}${settings.restRoot}${apiPath}`

/** A setting in the environment that cannot be read. */
export class InvalidSetting extends Data.TaggedError("InvalidSetting")<{
  readonly name: string
  readonly message: string
}> {}

/** Refuses a certificate and key Node cannot use for a TLS server, naming the settings. */
export const checkTls = (pems: { readonly cert: string; readonly key: string }): Effect.Effect<void, InvalidSetting> =>
  Effect.try({
    try: () => void tls.createSecureContext({ cert: pems.cert, key: pems.key }),
    catch: (error) =>
      new InvalidSetting({
        name: "LM_TLS_CERT",
        message: `LM_TLS_CERT, LM_TLS_KEY: not a certificate and key the server can use (${error instanceof Error ? error.message : error})`
      })
  })

/** The adapter's settings as a service. */
export class HttpSettings extends Context.Service<HttpSettings, Settings>()("lm/http/HttpSettings") {
  /** Settings with every default, overridden by `overrides`. */
  static readonly make = (overrides: Partial<Settings> = {}): Settings => ({
    restRoot: "/api",
    trustProxyHops: 0,
    adminAllowedIps: undefined,
    maxBodyBytes: defaultMaxBodyBytes,
    maxImportBodyBytes: defaultMaxImportBodyBytes,
    version,
    fastPath: true,
    maxConnections: 1024,
    maxConnectionsPerIp: 256,
    headersTimeoutSeconds: 10,
    bodyTimeoutSeconds: 10,
    uploadIdleTimeoutSeconds: 30,
    uploadTimeoutSeconds: 3 * 60 * 60,
    tls: undefined,
    forceHttps: false,
    corsOrigins: undefined,
    maxArtifactBytes: defaultMaxArtifactBytes,
    billingSecrets: {},
    wplmCompat: false,
    ...overrides,
    ...(overrides.restRoot === undefined ? {} : { restRoot: normalizeRestRoot(overrides.restRoot) })
  })

  /** The settings as given. */
  static readonly layer = (overrides: Partial<Settings> = {}): Layer.Layer<HttpSettings> =>
    Layer.succeed(HttpSettings, HttpSettings.make(overrides))
}
