/** `lm serve` and `lm migrate` (CONTRACT §13): the server, and the store's schema. */
import { Console, Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { serverLayer } from "../App.js"
import { layerArtifactSettingsFromEnv } from "../ArtifactStore.js"
import { launchServer } from "../Main.js"
import { engineOptionsFromEnv, redisUrlFromEnv } from "../settings/Engine.js"
import { layerHttpSettingsFromEnv, listenFromEnv } from "../settings/Http.js"
import { storeChoiceFromEnv, storeLayer } from "../Store.js"
import { refused } from "./Store.js"

export const serve = Command.make("serve", {}, () =>
  launchServer(
    Layer.unwrap(
      Effect.gen(function*() {
        const choice = yield* storeChoiceFromEnv
        const listen = yield* listenFromEnv
        const options = yield* engineOptionsFromEnv(choice)
        const redisUrl = yield* redisUrlFromEnv
        return serverLayer(choice, listen, options, redisUrl)
      })
    ).pipe(Layer.provide(layerHttpSettingsFromEnv), Layer.provide(layerArtifactSettingsFromEnv))
  )).pipe(
    Command.withDescription(
      "Run the HTTP server until SIGTERM. Settings from the environment: HOST, PORT, LM_DATA_DIR (PGlite, the default), " +
        "DATABASE_URL (PostgreSQL), LM_STORAGE=memory, LM_METRICS_PORT, LM_LOG_FORMAT, ... (see the README)"
    )
  )

export const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    const choice = yield* storeChoiceFromEnv
    yield* Layer.build(storeLayer(choice)).pipe(Effect.scoped)
    yield* Console.log(`migrated: ${choice._tag}`)
  }).pipe(Effect.mapError(refused))).pipe(Command.withDescription("Create or upgrade the store's schema (the same store settings as serve)"))
