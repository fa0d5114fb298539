/**
 * The HTTP adapter's settings (CONTRACT §2, §13), read from the environment by {@link HttpSettings.fromEnv}
 * or given directly (tests, embedders) with {@link HttpSettings.layer}.
 */
import * as fs from "node:fs"
import * as tls from "node:tls"
import { Config, Context, Data, Effect, Layer } from "effect"
import { apiPath } from "../api/Api.js"
import { version } from "../version.js"
import { type IpAllowList, parseIpAllowList } from "./ClientIp.js"

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
   * `LM_ARTIFACT_DIR` (default `{LM_DATA_DIR}/artifacts`): the folder of uploaded release artifacts. Undefined (the
   * memory store, tests): a new temporary folder for the life of the process.
   */
  readonly artifactDir: string | undefined
  /**
   * `LM_ARTIFACT_S3_BUCKET` (with `LM_ARTIFACT_S3_ENDPOINT`, `LM_ARTIFACT_S3_REGION`, `LM_ARTIFACT_S3_PREFIX`): keep
   * artifacts in an S3-compatible bucket instead of `artifactDir`, so that several servers share them. Credentials
   * come from the AWS SDK's usual chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, a profile, a role).
   */
  readonly artifactS3: ArtifactS3Settings | undefined
}

/** Where an S3-compatible artifact store is. */
export interface ArtifactS3Settings {
  readonly bucket: string
  /** An S3-compatible server's URL (path-style requests are used then); unset: AWS S3. */
  readonly endpoint: string | undefined
  readonly region: string
  readonly prefix: string
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

/** `/api` to `/api`, `wp-json/` to `/wp-json`, `/` and `` to ``. */
export const normalizeRestRoot = (root: string): string => {
  const trimmed = root.trim().replace(/\/+$/, "")
  if (trimmed === "") return ""
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** `api_base` for a server address, e.g. `http://127.0.0.1:8080/api/lm/v1`. */
export const apiBase = (origin: string, settings: Pick<Settings, "restRoot">): string =>
  `${origin}${settings.restRoot}${apiPath}`

/** `LM_TRUST_PROXY`: `true`/`yes`/`on` is one proxy, a number is that many, `false`/`0`/unset none. */
export const parseTrustProxy = (value: string): number => {
  const text = value.trim().toLowerCase()
  if (text === "" || text === "false" || text === "no" || text === "off") return 0
  if (text === "true" || text === "yes" || text === "on") return 1
  const hops = Number(text)
  if (!Number.isInteger(hops) || hops < 0) throw new Error(`expected true, false or a number of proxies, got ${value}`)
  return hops
}

/**
 * `LM_CORS_ORIGINS`: a comma list of origins (`https://app.example.com`, `http://localhost:5173`), compared as
 * browsers send them (scheme, host, port; lower case, no path); empty is unset. `*` is refused: it is what unset
 * means for public routes, and management routes never allow it.
 */
export const parseCorsOrigins = (value: string): ReadonlyArray<string> | undefined => {
  const entries = value.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  if (entries.length === 0) return undefined
  return entries.map((entry) => {
    if (entry === "*") throw new Error("* is not an origin; leave the setting unset to allow any origin on public routes")
    let url: URL | undefined
    try {
      url = new URL(entry)
    } catch {
      url = undefined
    }
    const plain = url !== undefined && url.pathname === "/" && url.search === "" && url.hash === "" &&
      url.username === "" && url.password === "" && !entry.endsWith("#") && !entry.endsWith("?")
    const origin = url?.origin
    if (!plain || origin === undefined || origin === "null") {
      throw new Error(`expected origins such as https://app.example.com (scheme, host and port only), got ${entry}`)
    }
    return origin
  })
}

/** A boolean setting: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`; empty is `fallback`. */
export const parseSwitch = (value: string, fallback: boolean): boolean => {
  const text = value.trim().toLowerCase()
  if (text === "") return fallback
  if (text === "1" || text === "true" || text === "yes" || text === "on") return true
  if (text === "0" || text === "false" || text === "no" || text === "off") return false
  throw new Error(`expected on or off (1/0, true/false, yes/no), got ${value}`)
}

/** A setting in the environment that cannot be read. */
export class InvalidSetting extends Data.TaggedError("InvalidSetting")<{
  readonly name: string
  readonly message: string
}> {}

export const readSetting = <A>(name: string, read: () => A): Effect.Effect<A, InvalidSetting> =>
  Effect.try({
    try: read,
    catch: (error) => new InvalidSetting({ name, message: `${name}: ${error instanceof Error ? error.message : error}` })
  })

/** The text of a PEM file a setting names. */
const readPemFile = (name: string, file: string) =>
  readSetting(name, () => {
    try {
      return fs.readFileSync(file, "utf8")
    } catch (error) {
      throw new Error(`cannot read the PEM file ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`)
    }
  })

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

/** An integer setting of at least 1, `fallback` when unset. */
export const positiveInt = (name: string, fallback: number) =>
  Effect.flatMap(Config.String(name).pipe(Config.withDefault("")), (text) =>
    readSetting(name, () => {
      if (text.trim() === "") return fallback
      const value = Number(text)
      if (!Number.isInteger(value) || value < 1) throw new Error(`expected a whole number of at least 1, got ${text}`)
      return value
    }))

/** The adapter's settings as a service. */
export class HttpSettings extends Context.Service<HttpSettings, Settings>()("lm/http/HttpSettings") {
  /** Settings with every default, overridden by `overrides`. */
  static readonly make = (overrides: Partial<Settings> = {}): Settings => ({
    restRoot: "/api",
    trustProxyHops: 0,
    adminAllowedIps: undefined,
    maxBodyBytes: defaultMaxBodyBytes,
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
    artifactDir: undefined,
    artifactS3: undefined,
    ...overrides,
    ...(overrides.restRoot === undefined ? {} : { restRoot: normalizeRestRoot(overrides.restRoot) })
  })

  /** The settings as given. */
  static readonly layer = (overrides: Partial<Settings> = {}): Layer.Layer<HttpSettings> =>
    Layer.succeed(HttpSettings, HttpSettings.make(overrides))

  /**
   * The settings from `LM_REST_ROOT`, `LM_TRUST_PROXY`, `LM_ADMIN_ALLOWED_IPS`, `LM_HTTP_FAST_PATH`,
   * `LM_MAX_CONNECTIONS`, `LM_MAX_CONNECTIONS_PER_IP`, `LM_HEADERS_TIMEOUT_SECONDS`, `LM_BODY_TIMEOUT_SECONDS`,
   * `LM_UPLOAD_IDLE_TIMEOUT_SECONDS`, `LM_UPLOAD_TIMEOUT_SECONDS`,
   * `LM_TLS_CERT`, `LM_TLS_KEY` (the files are read here: a missing one refuses the start), `LM_FORCE_HTTPS`,
   * `LM_CORS_ORIGINS`, `LM_MAX_ARTIFACT_BYTES`, `LM_ARTIFACT_DIR` (default `{LM_DATA_DIR}/artifacts`), `LM_ARTIFACT_S3_*`.
   */
  static readonly fromEnv: Effect.Effect<Settings, Config.ConfigError | InvalidSetting> = Effect.gen(function*() {
    const restRoot = yield* Config.String("LM_REST_ROOT").pipe(Config.withDefault("/api"))
    const trustProxy = yield* Config.String("LM_TRUST_PROXY").pipe(Config.withDefault(""))
    const allowed = yield* Config.String("LM_ADMIN_ALLOWED_IPS").pipe(Config.withDefault(""))
    const fastPathSetting = yield* Config.String("LM_HTTP_FAST_PATH").pipe(Config.withDefault(""))
    const trustProxyHops = yield* readSetting("LM_TRUST_PROXY", () => parseTrustProxy(trustProxy))
    const adminAllowedIps = yield* readSetting(
      "LM_ADMIN_ALLOWED_IPS",
      () => allowed.trim() === "" ? undefined : parseIpAllowList(allowed)
    )
    const fastPath = yield* readSetting("LM_HTTP_FAST_PATH", () => parseSwitch(fastPathSetting, true))
    const defaults = HttpSettings.make()
    const maxConnections = yield* positiveInt("LM_MAX_CONNECTIONS", defaults.maxConnections)
    const maxConnectionsPerIp = yield* positiveInt("LM_MAX_CONNECTIONS_PER_IP", defaults.maxConnectionsPerIp)
    const headersTimeoutSeconds = yield* positiveInt("LM_HEADERS_TIMEOUT_SECONDS", defaults.headersTimeoutSeconds)
    const bodyTimeoutSeconds = yield* positiveInt("LM_BODY_TIMEOUT_SECONDS", defaults.bodyTimeoutSeconds)
    const uploadIdleTimeoutSeconds = yield* positiveInt("LM_UPLOAD_IDLE_TIMEOUT_SECONDS", defaults.uploadIdleTimeoutSeconds)
    const uploadTimeoutSeconds = yield* positiveInt("LM_UPLOAD_TIMEOUT_SECONDS", defaults.uploadTimeoutSeconds)
    const certFile = yield* Config.String("LM_TLS_CERT").pipe(Config.withDefault(""))
    const keyFile = yield* Config.String("LM_TLS_KEY").pipe(Config.withDefault(""))
    if ((certFile === "") !== (keyFile === "")) {
      return yield* new InvalidSetting({
        name: certFile === "" ? "LM_TLS_CERT" : "LM_TLS_KEY",
        message: "LM_TLS_CERT and LM_TLS_KEY go together: set both (PEM files) to serve HTTPS, or neither"
      })
    }
    const tls = certFile === ""
      ? undefined
      : { cert: yield* readPemFile("LM_TLS_CERT", certFile), key: yield* readPemFile("LM_TLS_KEY", keyFile) }
    // Checked here, before the store opens, as the server will use them.
    if (tls !== undefined) yield* checkTls(tls)
    const forceHttpsSetting = yield* Config.String("LM_FORCE_HTTPS").pipe(Config.withDefault(""))
    const forceHttps = yield* readSetting("LM_FORCE_HTTPS", () => parseSwitch(forceHttpsSetting, false))
    const corsSetting = yield* Config.String("LM_CORS_ORIGINS").pipe(Config.withDefault(""))
    const corsOrigins = yield* readSetting("LM_CORS_ORIGINS", () => parseCorsOrigins(corsSetting))
    const maxArtifactBytes = yield* positiveInt("LM_MAX_ARTIFACT_BYTES", defaults.maxArtifactBytes)
    const artifactDirSetting = yield* Config.String("LM_ARTIFACT_DIR").pipe(Config.withDefault(""))
    const dataDir = yield* Config.String("LM_DATA_DIR").pipe(Config.withDefault("./data"))
    const memory = (yield* Config.String("LM_STORAGE").pipe(Config.withDefault(""))) === "memory"
    const artifactDir = artifactDirSetting !== "" ? artifactDirSetting : memory ? undefined : `${dataDir}/artifacts`
    const s3Bucket = yield* Config.String("LM_ARTIFACT_S3_BUCKET").pipe(Config.withDefault(""))
    const artifactS3 = s3Bucket === "" ? undefined : {
      bucket: s3Bucket,
      endpoint: (yield* Config.String("LM_ARTIFACT_S3_ENDPOINT").pipe(Config.withDefault(""))) || undefined,
      region: yield* Config.String("LM_ARTIFACT_S3_REGION").pipe(Config.withDefault("us-east-1")),
      prefix: yield* Config.String("LM_ARTIFACT_S3_PREFIX").pipe(Config.withDefault(""))
    }
    return HttpSettings.make({
      artifactS3,
      maxArtifactBytes,
      artifactDir,
      tls,
      corsOrigins,
      forceHttps,
      restRoot,
      trustProxyHops,
      adminAllowedIps,
      fastPath,
      maxConnections,
      maxConnectionsPerIp,
      headersTimeoutSeconds,
      bodyTimeoutSeconds,
      uploadIdleTimeoutSeconds,
      uploadTimeoutSeconds
    })
  })

  /** The settings read from the environment. */
  static readonly layerFromEnv: Layer.Layer<HttpSettings, Config.ConfigError | InvalidSetting> = Layer.effect(
    HttpSettings,
    HttpSettings.fromEnv
  )
}

/** `HOST` and `PORT` from the environment (`PORT=0` picks a free port). */
export const listenFromEnv: Effect.Effect<Listen, Config.ConfigError | InvalidSetting> = Effect.gen(function*() {
  const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
  // Not `Config.Port`: it refuses 0, which here asks for a free port.
  const port = yield* Config.Int("PORT").pipe(Config.withDefault(8080))
  if (port < 0 || port > 65535) {
    return yield* new InvalidSetting({ name: "PORT", message: `PORT: expected 0 to 65535, got ${port}` })
  }
  return { host, port }
})
