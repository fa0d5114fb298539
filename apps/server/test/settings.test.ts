/**
 * The settings read from the environment: the HTTP adapter's, the listen address, where artifacts are kept, the
 * failed-login rate limit, the console's folder.
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as path from "node:path"
import { artifactSettingsFromEnv } from "../src/ArtifactStore.js"
import { consoleDirFromEnv, defaultConsoleDir } from "../src/settings/Console.js"
import { rateLimitsFromEnv } from "../src/settings/Engine.js"
import { httpSettingsFromEnv, listenFromEnv, parseCorsOrigins, parseTrustProxy } from "../src/settings/Http.js"

describe("settings", () => {
  it("reads LM_TRUST_PROXY as a number of proxies", () => {
    expect(["", "false", "0", "no"].map(parseTrustProxy)).toEqual([0, 0, 0, 0])
    expect(["true", "1", "yes", "2"].map(parseTrustProxy)).toEqual([1, 1, 1, 2])
    expect(() => parseTrustProxy("sometimes")).toThrow()
  })
})

describe("settings from the environment", () => {
  const read = <A, E>(effect: Effect.Effect<A, E>, env: Record<string, string>) =>
    Effect.runSyncExit(Effect.provide(effect, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

  it("uses the defaults when nothing is set", () => {
    const settings = read(httpSettingsFromEnv, {})
    expect(Exit.isSuccess(settings) && settings.value).toMatchObject({ restRoot: "/api", trustProxyHops: 0, adminAllowedIps: undefined, fastPath: true })
    const listen = read(listenFromEnv, {})
    expect(Exit.isSuccess(listen) && listen.value).toEqual({ host: "127.0.0.1", port: 8080 })
  })

  it("reads LM_REST_ROOT, LM_TRUST_PROXY, LM_ADMIN_ALLOWED_IPS, HOST and PORT", () => {
    const env = { LM_REST_ROOT: "/wp-json/", LM_TRUST_PROXY: "true", LM_ADMIN_ALLOWED_IPS: "10.0.0.0/8,::1", HOST: "0.0.0.0", PORT: "0" }
    const settings = read(httpSettingsFromEnv, env)
    if (!Exit.isSuccess(settings)) throw new Error("expected settings")
    expect(settings.value.restRoot).toBe("/wp-json")
    expect(settings.value.trustProxyHops).toBe(1)
    expect(settings.value.adminAllowedIps?.allows("10.9.9.9")).toBe(true)
    expect(settings.value.adminAllowedIps?.allows("192.0.2.1")).toBe(false)
    const listen = read(listenFromEnv, env)
    expect(Exit.isSuccess(listen) && listen.value).toEqual({ host: "0.0.0.0", port: 0 })
  })

  it("reads LM_HTTP_FAST_PATH as a switch", () => {
    const fastPath = (value: string) => {
      const settings = read(httpSettingsFromEnv, { LM_HTTP_FAST_PATH: value })
      return Exit.isSuccess(settings) ? settings.value.fastPath : "refused"
    }
    expect(["0", "off", "false", "NO"].map(fastPath)).toEqual([false, false, false, false])
    expect(["1", "on", "true", "yes", ""].map(fastPath)).toEqual([true, true, true, true, true])
    expect(fastPath("sometimes")).toBe("refused")
  })

  it("reads LM_UPLOAD_TIMEOUT_SECONDS (default 3 h), a whole number of seconds", () => {
    const uploadTimeout = (env: Record<string, string>) => {
      const settings = read(httpSettingsFromEnv, env)
      return Exit.isSuccess(settings) ? settings.value.uploadTimeoutSeconds : "refused"
    }
    expect([{}, { LM_UPLOAD_TIMEOUT_SECONDS: "60" }].map(uploadTimeout)).toEqual([10_800, 60])
    expect(["0", "1.5", "soon"].map((value) => uploadTimeout({ LM_UPLOAD_TIMEOUT_SECONDS: value }))).toEqual(["refused", "refused", "refused"])
  })

  it("LM_RATE_LIMIT_AUTH_FAILURES sets how many failed logins a minute (10 when unset)", () => {
    const perMinute = (env: Record<string, string>) => {
      const exit = read(rateLimitsFromEnv, env)
      return Exit.isSuccess(exit) ? exit.value.settings.authFailures.perMinute : "refused"
    }
    expect(perMinute({})).toBe(10)
    expect(perMinute({ LM_RATE_LIMIT_AUTH_FAILURES: "30" })).toBe(30)
    expect(perMinute({ LM_RATE_LIMIT_AUTH_FAILURES: "0" })).toBe("refused")
  })

  it("LM_CONSOLE and LM_CONSOLE_DIR: the console's folder, the repository's build by default, none when off", () => {
    const dir = (env: Record<string, string>) => {
      const exit = read(consoleDirFromEnv, env)
      return Exit.isSuccess(exit) ? exit.value : "refused"
    }
    expect(dir({})).toBe(defaultConsoleDir)
    expect(defaultConsoleDir).toBe(path.join(import.meta.dirname, "../../console/dist/"))
    expect(dir({ LM_CONSOLE_DIR: "/srv/console" })).toBe("/srv/console")
    expect(dir({ LM_CONSOLE: "off", LM_CONSOLE_DIR: "/srv/console" })).toBeUndefined()
    expect(dir({ LM_CONSOLE: "sometimes" })).toBe("refused")
  })

  it("refuses settings it cannot read instead of ignoring them", () => {
    expect(Exit.isFailure(read(httpSettingsFromEnv, { LM_ADMIN_ALLOWED_IPS: "10.0.0.0/8,office" }))).toBe(true)
    expect(Exit.isFailure(read(httpSettingsFromEnv, { LM_TRUST_PROXY: "maybe" }))).toBe(true)
    expect(Exit.isFailure(read(listenFromEnv, { PORT: "http" }))).toBe(true)
    expect(Exit.isFailure(read(listenFromEnv, { PORT: "70000" }))).toBe(true)
  })
})

describe("LM_CORS_ORIGINS", () => {
  it("reads a comma list of origins, normalised as browsers send them", () => {
    expect(parseCorsOrigins("")).toBeUndefined()
    expect(parseCorsOrigins(" https://App.Example.com , http://localhost:5173/ ")).toEqual([
      "https://app.example.com",
      "http://localhost:5173"
    ])
    expect(parseCorsOrigins("https://a.example:443")).toEqual(["https://a.example"])
  })

  it("refuses * and anything that is not an origin", () => {
    expect(() => parseCorsOrigins("*")).toThrow(/unset/)
    expect(() => parseCorsOrigins("app.example.com")).toThrow(/origins such as/)
    expect(() => parseCorsOrigins("https://a.example/path")).toThrow(/origins such as/)
  })
})

describe("artifact settings", () => {
  const read = (env: Record<string, string>) =>
    Effect.runSync(Effect.provide(artifactSettingsFromEnv, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

  it("keep artifacts beside the data, in a temporary folder on the memory store, or in a bucket", () => {
    expect(read({})).toEqual({ dir: "./data/artifacts", s3: undefined })
    expect(read({ LM_DATA_DIR: "/srv/lm" })).toEqual({ dir: "/srv/lm/artifacts", s3: undefined })
    expect(read({ LM_STORAGE: "memory" })).toEqual({ dir: undefined, s3: undefined })
    expect(read({ LM_STORAGE: "memory", LM_ARTIFACT_DIR: "/srv/artifacts" }).dir).toBe("/srv/artifacts")
    expect(read({ LM_ARTIFACT_S3_BUCKET: "releases", LM_ARTIFACT_S3_ENDPOINT: "http://127.0.0.1:9000" }).s3).toEqual({
      bucket: "releases",
      endpoint: "http://127.0.0.1:9000",
      region: "us-east-1",
      prefix: ""
    })
  })
})
