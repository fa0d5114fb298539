/** The server `lm serve` runs (loaded only by `serve`, so that the other commands start quickly). */
import { Effect, Layer } from "effect"
import { serverLayer } from "../App.js"
import { layerArtifactSettingsFromEnv } from "../ArtifactStore.js"
import { launchServer } from "../Main.js"
import { engineOptionsFromEnv, redisUrlFromEnv } from "../settings/Engine.js"
import { layerHttpSettingsFromEnv, listenFromEnv } from "../settings/Http.js"
import { storeChoiceFromEnv } from "../Store.js"

/** The server on the settings in the environment, until interrupted (SIGTERM). */
export const serveFromEnv = launchServer(
  Layer.unwrap(
    Effect.gen(function*() {
      const choice = yield* storeChoiceFromEnv
      const listen = yield* listenFromEnv
      const options = yield* engineOptionsFromEnv(choice)
      const redisUrl = yield* redisUrlFromEnv
      return serverLayer(choice, listen, options, redisUrl)
    })
  ).pipe(Layer.provide(layerHttpSettingsFromEnv), Layer.provide(layerArtifactSettingsFromEnv))
)
