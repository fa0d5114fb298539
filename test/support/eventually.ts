/**
 * Waiting for an observable condition instead of sleeping a fixed time: the check is retried until it passes,
 * within a bound, so a test never waits longer than it must and never hangs.
 */
import { Effect } from "effect"

export interface EventuallyOptions {
  /** Milliseconds after which the last failure is reported (default 10 000). */
  readonly timeout?: number
  /** Milliseconds between tries (default 20). */
  readonly interval?: number
}

const settings = (options: EventuallyOptions) => ({ timeout: options.timeout ?? 10_000, interval: options.interval ?? 20 })

const timedOut = (error: unknown, timeout: number) => {
  if (error instanceof Error) error.message = `still failing after ${timeout} ms: ${error.message}`
  return error
}

/**
 * Calls `check` until it returns without throwing (e.g. its `expect`s pass) and returns its value; after
 * `timeout` ms, throws its last error.
 */
export const eventually = async <A>(check: () => A | Promise<A>, options: EventuallyOptions = {}): Promise<A> => {
  const { interval, timeout } = settings(options)
  const deadline = Date.now() + timeout
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() >= deadline) throw timedOut(error, timeout)
    }
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
}

/**
 * The same for an Effect on the live clock: runs `check` until it succeeds (a failure or a defect, such as a
 * failed assertion, means "not yet"); after `timeout` ms, fails with its last cause.
 */
export const eventuallyEffect = <A, E, R>(check: Effect.Effect<A, E, R>, options: EventuallyOptions = {}): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const { interval, timeout } = settings(options)
    const deadline = Date.now() + timeout
    const attempt: Effect.Effect<A, E, R> = Effect.exit(check).pipe(
      Effect.flatMap((exit) =>
        exit._tag === "Success" || Date.now() >= deadline ? exit : Effect.andThen(Effect.sleep(interval), attempt)
      )
    )
    return attempt
  })
