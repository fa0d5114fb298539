/**
 * The heavy half of `Store.ts` (the engine on the configured store: storage packages, PGlite), loaded only by
 * the commands that work on the store, so that commands against a server start quickly.
 */
import { Effect, Layer } from "effect"
import { Engine } from "@lm/domain"
import { engineOptionsFromEnv } from "../settings/Engine.js"
import { storeChoiceFromEnv, storeLayer } from "../Store.js"
import { refusalMessage } from "../Main.js"
import { Refused } from "./Server.js"

/** What the engine provides to a command. */
export type EngineServices = Layer.Success<ReturnType<typeof Engine.layer<never, never>>>

/** A failure on the store as a {@link Refused}: the error's contract code (`store` for the store's own) and message. */
const refused = (error: unknown): Refused => {
  const code = (error as { readonly code?: unknown } | null)?.code
  return new Refused({ code: typeof code === "string" ? code : "store", message: refusalMessage(error) })
}

/** Runs `program` on the engine on the configured store, without background jobs. */
export const runOnEngine = <A, E>(program: Effect.Effect<A, E, EngineServices>) =>
  Effect.gen(function*() {
    const choice = yield* storeChoiceFromEnv
    const options = yield* engineOptionsFromEnv(choice)
    return yield* program.pipe(Effect.provide(Engine.layer(storeLayer(choice), {
      ...options,
      sweepIntervalSeconds: 0,
      eventRetentionDays: 0,
      anomalyIntervalSeconds: 0,
      webhooks: { ...options.webhooks, pollMillis: 0 }
    })))
  }).pipe(Effect.mapError(refused))

/** Opens the configured store, which applies its pending migrations; answers its kind. */
export const migrateStore = Effect.gen(function*() {
  const choice = yield* storeChoiceFromEnv
  yield* Layer.build(storeLayer(choice)).pipe(Effect.scoped)
  return choice._tag
}).pipe(Effect.mapError(refused))
