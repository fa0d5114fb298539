/**
 * The commands that work directly on the store when no server runs (`migrate`, `api-keys` without `LM_URL`,
 * `signing-keys`): the engine on the same store settings as `lm serve` (`LM_STORAGE=memory`, `DATABASE_URL`, or
 * PGlite in `LM_DATA_DIR`), without background jobs. Their writes are in the audit log with actor `cli`.
 */
import { Effect } from "effect"
import { AuditLog, type Model } from "@lm/domain"
import type { Refused } from "./Server.js"
import type { EngineServices } from "./StoreEngine.js"

export type { EngineServices }

/**
 * Runs a one-off command against the engine on the configured store (no sweep, retention, anomaly detection or
 * delivery); a failure is a {@link Refused} with the error's contract code (`store` for the store's own).
 */
export const withEngine = <A, E>(program: Effect.Effect<A, E, EngineServices>): Effect.Effect<A, Refused> =>
  Effect.flatMap(Effect.promise(() => import("./StoreEngine.js")), (store) => store.runOnEngine(program))


/** Records a command-line write on the store in the audit log (actor `cli`). */
export const auditCli = (action: string, target: Model.AuditTarget, status = 200) =>
  Effect.flatMap(AuditLog, (log) =>
    log.record({
      actor: { type: "cli", apiKeyId: null, truncatedKey: null },
      ip: null,
      action,
      target,
      requestId: null,
      status
    }))
