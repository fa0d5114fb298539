/**
 * The server's logs (CONTRACT §18), on effect's `Logger`: one line per entry, JSON (`time`, `level`, `message`,
 * `request_id` when the entry belongs to a request (an annotation, or the request the fiber serves on the Effect
 * stack), `trace_id`/`span_id`/`span` when a span is current, `cause`,
 * and the entry's other annotations) or text, at `LM_LOG_LEVEL` and above, and with `LM_ACCESS_LOG` one line per
 * request (method, route template, status, duration, request id, client IP), reported by both transports'
 * `RequestObserver`.
 *
 * No line holds a secret: every line is passed through {@link redact} as it is written, whatever logged it (a
 * cause quoting a license key, a URL with a download token), so no caller has to remember.
 */
import { Cause, Context, Effect, Layer, Logger, References, Tracer } from "effect"
import { Keys } from "@lm/domain"
import { type AnsweredRequest, requestIdOfContext } from "@lm/http"
import { type LogSettings, logLevels } from "./settings/Logging.js"

/**
 * The text with every secret cut: license keys (first group kept), API consumer secrets, webhook secrets,
 * credentials of an `Authorization` header, `token=` query values, and signed tokens (`payload.signature`).
 */
export const redact = (text: string): string =>
  text
    .replace(Keys.keysInText, (key) => `${key.slice(0, key.indexOf("-"))}-…`)
    .replace(Keys.storedKeysInText, (key) => `${key.slice(0, key.indexOf("-"))}-…`)
    .replace(/\bcs_[0-9A-Za-z]+/g, "cs_…")
    .replace(/\bwhsec_[0-9A-Za-z_-]+/g, "whsec_…")
    .replace(/\b(Basic|Bearer)\s+[0-9A-Za-z+/=._~-]+/gi, "$1 …")
    .replace(/([?&]token=)[^&\s"']+/gi, "$1…")
    .replace(/[0-9A-Za-z_-]{16,}\.[0-9A-Za-z_-]{16,}(?:\.[0-9A-Za-z_-]+)?/g, "…")

/** A logged message as text (effect passes an array of the arguments given). */
const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) =>
    typeof part === "string" ? part : part instanceof Error ? `${part.name}: ${part.message}` : safeJson(part)
  ).join(" ")
}

const safeJson = (value: unknown): string => {
  try {
    return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)
  } catch {
    return String(value)
  }
}

/** The fields of a log line, before it is written. */
const fieldsOf = (options: Logger.Options<unknown>): Record<string, unknown> => {
  const { cause, date, fiber, logLevel, message } = options
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.toLowerCase(),
    message: messageText(message)
  }
  const requestId = requestIdOfContext(fiber.context)
  if (requestId !== undefined) line.request_id = requestId
  for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) line[key] = value
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span !== undefined) {
    line.trace_id = span.traceId
    line.span_id = span.spanId
    if (span._tag === "Span") line.span = span.name
  }
  if (cause.reasons.length > 0) line.cause = Cause.pretty(cause)
  return line
}

/** One JSON object per line on stdout. */
export const jsonLogger = Logger.make((options) => {
  process.stdout.write(`${redact(JSON.stringify(fieldsOf(options)))}\n`)
})

/** `time LEVEL message key=value ...` per line on stdout (a cause on the lines after). */
export const textLogger = Logger.make((options) => {
  const { cause, level, message, time, ...rest } = fieldsOf(options)
  const pairs = Object.entries(rest).map(([key, value]) => ` ${key}=${typeof value === "string" ? value : safeJson(value)}`).join("")
  const text = `${time} ${String(level).toUpperCase()} ${message}${pairs}${cause === undefined ? "" : `\n${cause}`}`
  process.stdout.write(`${redact(text)}\n`)
})

/** The loggers and the minimum level of `settings`, for the whole server. */
export const layerLogging = (settings: LogSettings) =>
  Layer.mergeAll(
    Logger.layer([settings.format === "json" ? jsonLogger : textLogger]),
    Layer.succeed(References.MinimumLogLevel, logLevels[settings.level])
  )

/**
 * The access log, as a `RequestObserver`: one `info` line per answered request through the loggers of the context
 * it is made in.
 */
export const makeAccessLog: Effect.Effect<(request: AnsweredRequest) => void> = Effect.map(
  Effect.context<never>(),
  (context) => {
    const run = Effect.runSyncWith(context)
    return (request) =>
      run(Effect.logInfo("request").pipe(Effect.annotateLogs({
        method: request.method,
        route: request.route,
        status: request.status,
        duration_ms: Math.round(request.durationMillis * 1000) / 1000,
        request_id: request.requestId,
        client_ip: request.clientIp() ?? null
      })))
  }
)
