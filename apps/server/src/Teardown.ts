/**
 * How `lm` ends (its own module, so that the command line loads nothing of the server to use it): exit 0 when the
 * server was stopped by a signal, as a process manager expects; otherwise Effect's default.
 */
import { Cause, Exit, Runtime } from "effect"

/** Exit 0 when the server was stopped by a signal, as a process manager expects. */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
