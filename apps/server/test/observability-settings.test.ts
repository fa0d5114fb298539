/**
 * The settings of the metrics listener (`LM_METRICS_PORT`) and of the OTLP export (`OTEL_*`), read from the
 * environment: off when unset, a value that cannot be used refuses the start naming the setting.
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { metricsListenFromEnv } from "../src/settings/Metrics.js"
import { otlpSettingsFromEnv } from "../src/settings/Tracing.js"

const read = <A, E>(effect: Effect.Effect<A, E>, env: Record<string, string>) =>
  Effect.runSyncExit(Effect.provide(effect, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

describe("LM_METRICS_PORT", () => {
  it("is off when unset or empty, else a port on HOST", () => {
    expect(read(metricsListenFromEnv, {})).toEqual(Exit.succeed(undefined))
    expect(read(metricsListenFromEnv, { LM_METRICS_PORT: " " })).toEqual(Exit.succeed(undefined))
    expect(read(metricsListenFromEnv, { LM_METRICS_PORT: "9464" })).toEqual(Exit.succeed({ host: "127.0.0.1", port: 9464 }))
    expect(read(metricsListenFromEnv, { LM_METRICS_PORT: "0", HOST: "0.0.0.0" })).toEqual(Exit.succeed({ host: "0.0.0.0", port: 0 }))
  })

  it("refuses what is not a port", () => {
    for (const value of ["http", "-1", "65536", "80.5"]) {
      const exit = read(metricsListenFromEnv, { LM_METRICS_PORT: value })
      expect(Exit.isFailure(exit) && String(exit.cause), value).toContain("LM_METRICS_PORT")
    }
  })
})

describe("OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  it("is off when unset; else the endpoint with the service name lm, protobuf, and the export intervals", () => {
    expect(read(otlpSettingsFromEnv, {})).toEqual(Exit.succeed(undefined))
    expect(read(otlpSettingsFromEnv, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual(Exit.succeed({
      endpoint: "http://collector:4318",
      serviceName: "lm",
      protocol: "http/protobuf",
      headers: {},
      exportEveryMillis: 5000,
      metricsEveryMillis: 60_000
    }))
  })

  it("reads OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_HEADERS", () => {
    const exit = read(otlpSettingsFromEnv, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example.com",
      OTEL_SERVICE_NAME: "lm-eu",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=a%3Db, X-Team = ops"
    })
    expect(exit).toEqual(Exit.succeed(expect.objectContaining({
      serviceName: "lm-eu",
      protocol: "http/json",
      headers: { "x-api-key": "a=b", "x-team": "ops" }
    })))
  })

  it("refuses an endpoint that is not an http URL, grpc, and unreadable headers", () => {
    for (
      const [env, name] of [
        [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT"],
        [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
        [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "novalue" }, "OTEL_EXPORTER_OTLP_HEADERS"]
      ] as const
    ) {
      const exit = read(otlpSettingsFromEnv, env)
      expect(Exit.isFailure(exit) && String(exit.cause), name).toContain(name)
    }
  })
})
