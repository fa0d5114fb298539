/**
 * Traces and metrics over OTLP/HTTP (CONTRACT §18) with effect's exporters (`effect/observability`), when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`settings/Tracing.ts`). With a tracer installed, the Effect HTTP stack
 * makes a server span per request (the caller's W3C `traceparent` honoured; `http.route`,
 * `http.response.status_code`), the fast path the same (`FastPath.ts`), every `Effect.fn` of the domain a child
 * span, and every SQL statement of the store a child of the span that ran it.
 *
 * Span attributes never carry a secret: the query parameters that hold one (`token`, `license_key`) are
 * redacted in `url.full` and `url.query`, and `Authorization` by effect's default.
 */
import { Layer } from "effect"
import { FetchHttpClient, UrlParams } from "effect/http"
import { OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import { version } from "@lm/api"
import type { OtlpSettings } from "./settings/Tracing.js"

/** Query parameters redacted in spans, besides effect's defaults (cloud signatures). */
const secretQueryParameters = ["token", "license_key"]

/** The OTLP exporters of `settings`: spans and metrics, and the redaction of secrets in span URLs. */
export const layerOtlp = (settings: OtlpSettings) => {
  const resource = { serviceName: settings.serviceName, serviceVersion: version }
  const common = { resource, headers: settings.headers }
  return Layer.mergeAll(
    OtlpTracer.layer({ ...common, url: `${settings.endpoint}/v1/traces`, exportInterval: settings.exportEveryMillis }),
    OtlpMetrics.layer({ ...common, url: `${settings.endpoint}/v1/metrics`, exportInterval: settings.metricsEveryMillis }),
    Layer.succeed(UrlParams.CurrentRedactedNames)([...UrlParams.CurrentRedactedNames.defaultValue(), ...secretQueryParameters])
  ).pipe(
    Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
}
