/**
 * Runs a server layer as the process: SIGTERM or SIGINT closes it gracefully (no new connections, requests in
 * flight finish) and the process exits 0; a failure to start (port in use, bad settings) exits non-zero.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Runtime } from "effect"

/** Exit 0 when the server was stopped by a signal, as a process manager expects. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

/** Launches `server` (e.g. from `layerServer`) until SIGTERM/SIGINT. */
export const runServer = <A, E>(server: Layer.Layer<A, E>): void =>
  NodeRuntime.runMain(Layer.launch(server).pipe(Effect.asVoid), { teardown })
