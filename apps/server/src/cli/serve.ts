/** `lm serve` and `lm migrate` (CONTRACT §13): the server, and the store's schema. */
import { Console, Effect } from "effect"
import { Command } from "effect/cli"

export const serve = Command.make("serve", {}, () =>
  Effect.flatMap(Effect.promise(() => import("./Launch.js")), (launch) => launch.serveFromEnv)).pipe(
    Command.withDescription(
      "Run the HTTP server until SIGTERM. Settings from the environment: HOST, PORT, LM_DATA_DIR (PGlite, the default), " +
        "DATABASE_URL (PostgreSQL), LM_STORAGE=memory, LM_METRICS_PORT, LM_LOG_FORMAT, ... (see the README)"
    )
  )

export const migrate = Command.make("migrate", {}, () =>
  Effect.flatMap(Effect.promise(() => import("./StoreEngine.js")), (store) => store.migrateStore).pipe(
    Effect.flatMap((kind) => Console.log(`migrated: ${kind}`))
  )).pipe(Command.withDescription("Create or upgrade the store's schema (the same store settings as serve)"))
