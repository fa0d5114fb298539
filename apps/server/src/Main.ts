/**
 * Runs a server layer as the process: SIGTERM or SIGINT closes it gracefully (no new connections, requests in
 * flight finish) and the process exits 0; a failure to start (port in use, bad settings) exits non-zero.
 */
// The module itself, not the package index: that loads every module, NodeRedis (and node-redis) among them.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Config, Data, Effect, Exit, Layer, Runtime, Schema, SchemaIssue } from "effect"
import { layerLogging } from "./Logging.js"
import { logSettingsFromEnv } from "./settings/Logging.js"
import { otlpSettingsFromEnv } from "./settings/Tracing.js"
import { layerOtlp } from "./Tracing.js"

/** Exit 0 when the server was stopped by a signal, as a process manager expects. */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * What a refusal says, in one line: the error's message, which names the setting at fault (`InvalidSetting`, the
 * master key's, the store's), or for a setting Effect's `Config` could not read, its name and what was expected.
 */
export const refusalMessage = (error: unknown): string => {
  const text = error instanceof Config.ConfigError && Schema.isSchemaError(error.cause)
    ? formatIssues(error.cause.issue).issues.map(({ message, path }) => `${(path ?? []).map(String).join(".")}: ${message}`).join("; ")
    : typeof error === "object" && error !== null && "message" in error
    ? String(error.message)
    : String(error)
  return text.replace(/\s*\n\s*/g, " ").trim()
}

/** A start refused, already said on stderr in one line: not logged again (with a stack) by the runtime. */
export class StartRefused extends Data.TaggedError("StartRefused")<{ readonly message: string }> {
  readonly [Runtime.errorReported] = false
}

/**
 * A start that failed with an error (a setting the server cannot use, a store it cannot open, a port it cannot
 * listen on) prints {@link refusalMessage} on stderr, one line without a stack. A defect (a bug) is logged in full.
 */
const refuseStart = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | StartRefused> => {
  const failure = Cause.hasDies(cause) ? undefined : cause.reasons.find(Cause.isFailReason)
  if (failure === undefined) return Effect.failCause(cause)
  // Already said (by a worker of `LM_WORKERS`, on the stderr it shares).
  if (failure.error instanceof StartRefused) return Effect.fail(failure.error)
  const message = refusalMessage(failure.error)
  return Effect.andThen(
    Effect.sync(() => process.stderr.write(`${message}\n`)),
    Effect.fail(new StartRefused({ message }))
  )
}

/**
 * The operator's observability settings for the whole process: the loggers of `LM_LOG_FORMAT` and `LM_LOG_LEVEL`
 * (`Logging.ts`), and with `OTEL_EXPORTER_OTLP_ENDPOINT` the OTLP exporters of traces and metrics (`Tracing.ts`).
 */
export const layerObservabilityFromEnv = Layer.unwrap(Effect.gen(function*() {
  const logging = layerLogging(yield* logSettingsFromEnv())
  const otlp = yield* otlpSettingsFromEnv
  return otlp === undefined ? logging : Layer.merge(logging, layerOtlp(otlp))
}))

/**
 * Runs `server` (e.g. from `layerServer`) until interrupted, with the operator's logs and OTLP export
 * ({@link layerObservabilityFromEnv}); a refused start is one line on stderr.
 */
export const launchServer = <A, E>(server: Layer.Layer<A, E>) =>
  Layer.launch(server.pipe(Layer.provide(layerObservabilityFromEnv))).pipe(Effect.asVoid, Effect.catchCause(refuseStart))

/** Runs `effect` (a start), a failure of which is a refused start: one line on stderr ({@link refusalMessage}). */
export const refusingStart = <A, E, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.catchCause(refuseStart))

/** Launches `server` (e.g. from `layerServer`) until SIGTERM/SIGINT. */
export const runServer = <A, E>(server: Layer.Layer<A, E>): void => NodeRuntime.runMain(launchServer(server), { teardown })
