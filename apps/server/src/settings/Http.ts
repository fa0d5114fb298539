/**
 * The HTTP adapter's settings (`HttpSettings` of `@lm/http`) and the listen address, from the environment.
 */
import * as fs from "node:fs"
import { Config, Effect, Layer } from "effect"
import { checkTls, HttpSettings, InvalidSetting, type Listen, parseIpAllowList, type Settings } from "@lm/http"
import { billingSecretsFromEnv } from "./Billing.js"
import { parseSwitch, positiveInt, readSetting } from "./Read.js"

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

/** The text of a PEM file a setting names. */
const readPemFile = (name: string, file: string) =>
  readSetting(name, () => {
    try {
      return fs.readFileSync(file, "utf8")
    } catch (error) {
      throw new Error(`cannot read the PEM file ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`)
    }
  })

/**
 * The settings from `LM_REST_ROOT`, `LM_TRUST_PROXY`, `LM_ADMIN_ALLOWED_IPS`, `LM_HTTP_FAST_PATH`,
 * `LM_MAX_CONNECTIONS`, `LM_MAX_CONNECTIONS_PER_IP`, `LM_HEADERS_TIMEOUT_SECONDS`, `LM_BODY_TIMEOUT_SECONDS`,
 * `LM_UPLOAD_IDLE_TIMEOUT_SECONDS`, `LM_UPLOAD_TIMEOUT_SECONDS`,
 * `LM_TLS_CERT`, `LM_TLS_KEY` (the files are read and checked here: a missing or unusable one refuses the start),
 * `LM_FORCE_HTTPS`,
 * `LM_CORS_ORIGINS`, `LM_MAX_ARTIFACT_BYTES`, `LM_IMPORT_MAX_BODY_BYTES`, `LM_WPLM_COMPAT`, and the billing providers' secrets (`settings/Billing.ts`).
 */
export const httpSettingsFromEnv: Effect.Effect<Settings, Config.ConfigError | InvalidSetting> = Effect.gen(function*() {
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
  const maxImportBodyBytes = yield* positiveInt("LM_IMPORT_MAX_BODY_BYTES", defaults.maxImportBodyBytes)
  const billingSecrets = yield* billingSecretsFromEnv
  const wplmCompatSetting = yield* Config.String("LM_WPLM_COMPAT").pipe(Config.withDefault(""))
  const wplmCompat = yield* readSetting("LM_WPLM_COMPAT", () => parseSwitch(wplmCompatSetting, false))
  return HttpSettings.make({
    wplmCompat,
    billingSecrets,
    maxArtifactBytes,
    maxImportBodyBytes,
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

/** `HttpSettings` read from the environment. */
export const layerHttpSettingsFromEnv: Layer.Layer<HttpSettings, Config.ConfigError | InvalidSetting> = Layer.effect(
  HttpSettings,
  httpSettingsFromEnv
)

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
