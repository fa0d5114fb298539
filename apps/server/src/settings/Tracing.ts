/**
 * The OTLP export settings (CONTRACT §18), the OpenTelemetry names: `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's
 * OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318`; unset: no export), `OTEL_SERVICE_NAME` (default `lm`),
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`
 * (`name=value,…`, e.g. a collector's API key), `OTEL_BSP_SCHEDULE_DELAY` (milliseconds between exports of
 * spans, default 5000) and `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds between exports of metrics, default 60000).
 */
import { Config, Effect } from "effect"
import { InvalidSetting } from "@lm/http"
import { positiveInt, readSetting } from "./Read.js"

export interface OtlpSettings {
  /** The base URL; traces go to `{endpoint}/v1/traces`, metrics to `{endpoint}/v1/metrics`. */
  readonly endpoint: string
  readonly serviceName: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Readonly<Record<string, string>>
  readonly exportEveryMillis: number
  readonly metricsEveryMillis: number
}

/** `name=value` pairs separated by commas, values URL-encoded (the OpenTelemetry format). */
const parseHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    if (pair.trim() === "") continue
    const equals = pair.indexOf("=")
    if (equals <= 0) throw new Error(`expected name=value pairs separated by commas`)
    headers[pair.slice(0, equals).trim().toLowerCase()] = decodeURIComponent(pair.slice(equals + 1).trim())
  }
  return headers
}

/** The OTLP settings, or undefined when `OTEL_EXPORTER_OTLP_ENDPOINT` is unset. */
export const otlpSettingsFromEnv: Effect.Effect<OtlpSettings | undefined, Config.ConfigError | InvalidSetting> = Effect.gen(
  function*() {
    const endpointText = (yield* Config.String("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(Config.withDefault(""))).trim()
    if (endpointText === "") return undefined
    const endpoint = yield* readSetting("OTEL_EXPORTER_OTLP_ENDPOINT", () => {
      const url = new URL(endpointText)
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`expected an http or https URL, got ${endpointText}`)
      return url.href.replace(/\/$/, "")
    })
    const serviceName = (yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault(""))).trim() || "lm"
    const protocolText = (yield* Config.String("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(Config.withDefault(""))).trim()
    const protocol = protocolText === "" || protocolText === "http/protobuf"
      ? "http/protobuf" as const
      : protocolText === "http/json"
      ? "http/json" as const
      : yield* new InvalidSetting({
        name: "OTEL_EXPORTER_OTLP_PROTOCOL",
        message: `OTEL_EXPORTER_OTLP_PROTOCOL: expected http/protobuf or http/json (grpc is not supported), got ${protocolText}`
      })
    const headersText = yield* Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""))
    const headers = yield* readSetting("OTEL_EXPORTER_OTLP_HEADERS", () => parseHeaders(headersText))
    const exportEveryMillis = yield* positiveInt("OTEL_BSP_SCHEDULE_DELAY", 5000)
    const metricsEveryMillis = yield* positiveInt("OTEL_METRIC_EXPORT_INTERVAL", 60_000)
    return { endpoint, serviceName, protocol, headers, exportEveryMillis, metricsEveryMillis }
  }
)
