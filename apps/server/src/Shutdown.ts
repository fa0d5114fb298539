/**
 * The end of the engine on SIGTERM: once the server has finished its requests, closing the engine (flushing the
 * event log, closing the store) has {@link engineCloseTimeoutMillis}; a store that does not answer must not keep
 * the process from exiting.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { ActivityRecorder, Services } from "@lm/domain"

/** How long closing the engine may take on SIGTERM, after the server has finished its requests. */
export const engineCloseTimeoutMillis = 5000

/**
 * The engine, whose closing is given up after `ms` (it goes on, detached, until the process exits): then one
 * line says so, with the count of events not written.
 */
export const closingWithin = <A, E, R>(engine: Layer.Layer<A | ActivityRecorder, E, R>, ms: number) =>
  Layer.effectContext(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(engine, scope).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
    yield* Effect.addFinalizer((exit) =>
      Effect.gen(function*() {
        const closing = yield* Effect.forkDetach(Scope.close(scope, exit))
        // Waited for with a timer, not by interrupting the wait: this runs while the process's main fiber is
        // being interrupted (SIGTERM), so an interruptible wait would end at once.
        const closed = yield* Effect.callback<boolean>((resume) => {
          const timer = setTimeout(() => resume(Effect.succeed(false)), ms)
          closing.addObserver(() => {
            clearTimeout(timer)
            resume(Effect.succeed(true))
          })
        })
        if (closed) return
        const pending = yield* Context.get(context, ActivityRecorder).pending
        yield* Effect.logWarning(
          `shutdown: the store did not answer within ${ms / 1000} s; ${Services.unwrittenMessage(pending)}`
        )
      })
    )
    return context
  }))
