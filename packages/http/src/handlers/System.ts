/**
 * The handlers of the `system` group: `GET /health` answers `{status: "ok", storage, version}` when the store
 * answers its check, and 503 `service_unavailable` (with `Retry-After`) when it does not.
 */
import { Context, Effect, Layer } from "effect"
import { Errors } from "@lm/domain"
import { Api, ApiErrors, ok } from "@lm/api"
import { HttpSettings } from "../server/Settings.js"
import { group } from "./Group.js"

/** The store as `/health` sees it: its name and a cheap reachability check (e.g. `SELECT 1`). */
export class StorageHealth extends Context.Service<StorageHealth, {
  /** `pglite`, `postgres`, `memory`, ... */
  readonly storage: string
  /** Succeeds when the store answers. */
  readonly check: Effect.Effect<void, unknown>
}>()("lm/http/StorageHealth") {
  /** A store that is always reachable (the memory store). */
  static readonly layerAlwaysUp = (storage: string): Layer.Layer<StorageHealth> =>
    Layer.succeed(StorageHealth, { storage, check: Effect.void })
}

/** The store's own 503 (`StorageUnavailable`), which the store has logged already (once per outage). */
const storeReported = (cause: unknown): cause is ApiErrors.DomainErrorLike & { readonly status: 503 } =>
  ApiErrors.isDomainErrorLike(cause) && cause.status === 503

const storageDown = (cause: unknown) =>
  storeReported(cause) ? cause : new Errors.StorageUnavailable({ message: "The store cannot be reached." })

/** The `system` group's handlers. */
export const SystemHandlers = group(
  Api,
  "system",
  Effect.fn(function*(handlers) {
    const { storage, check } = yield* StorageHealth
    const { version } = yield* HttpSettings
    const healthy = ok({ status: "ok" as const, storage, version })
    return handlers.handle("health", () =>
      check.pipe(
        Effect.as(healthy),
        Effect.catchCause((cause) => {
          const failure = cause.reasons[0]?._tag === "Fail" ? cause.reasons[0].error : undefined
          const down = Effect.fail(storageDown(failure))
          // A store outage is logged by the store, once, not once per check; anything else is logged here.
          return storeReported(failure) ? down : Effect.andThen(Effect.logWarning("Health check failed", cause), down)
        })
      ))
  })
)
