/** `lm serve` and `lm migrate` (CONTRACT §13): the server, and the store's schema. */
import cluster from "node:cluster"
import { Console, Effect } from "effect"
import { Command } from "effect/cli"

/**
 * One server process, or with `LM_WORKERS` above 1 the primary of that many (`Cluster.ts`), which loads neither
 * the server nor a store; its workers (forked with the same arguments) each run the server.
 */
const serveOrPrimary = Effect.gen(function*() {
  if (cluster.isPrimary) {
    const primary = yield* Effect.promise(() => import("./Primary.js"))
    const workers = yield* primary.workersOrRefusal
    if (workers !== undefined) return yield* primary.launchPrimary(workers.count, workers.metrics)
  }
  const launch = yield* Effect.promise(() => import("./Launch.js"))
  return yield* launch.serveFromEnv
})

export const serve = Command.make("serve", {}, () => serveOrPrimary).pipe(
    Command.withDescription(
      "Run the HTTP server until SIGTERM. Settings from the environment: HOST, PORT, LM_DATA_DIR (PGlite, the default), " +
        "DATABASE_URL (PostgreSQL), LM_STORAGE=memory, LM_METRICS_PORT, LM_LOG_FORMAT, ... (see the README)"
    )
  )

export const migrate = Command.make("migrate", {}, () =>
  Effect.flatMap(Effect.promise(() => import("./StoreEngine.js")), (store) => store.migrateStore).pipe(
    Effect.flatMap((kind) => Console.log(`migrated: ${kind}`))
  )).pipe(Command.withDescription("Create or upgrade the store's schema (the same store settings as serve)"))
