/**
 * `@lm/server`: the bundled server application (`lm`), for the tests and benchmarks that start it in-process:
 * the composition of the engine, a store and the HTTP adapter, with the settings read from the environment.
 */
export { serverLayer, serverLayerOn } from "./App.js"
export {
  type ArtifactS3Settings,
  ArtifactSettings,
  artifactSettingsFromEnv,
  artifactStoreLayer,
  layerArtifactSettingsFromEnv
} from "./ArtifactStore.js"
export * as FileArtifactStore from "./artifacts/FileArtifactStore.js"
export * as S3ArtifactStore from "./artifacts/S3ArtifactStore.js"
export { bootstrapKeyLayer } from "./BootstrapKey.js"
export { refusalMessage, runServer } from "./Main.js"
export { layerRedisRateLimits } from "./RedisRateLimits.js"
export {
  anomalyThresholdsFromEnv,
  defaultSyncEveryMillis,
  engineOptionsFromEnv,
  rateLimitsFromEnv,
  redisUrlFromEnv,
  webhookOptionsFromEnv
} from "./settings/Engine.js"
export { httpSettingsFromEnv, layerHttpSettingsFromEnv, listenFromEnv, parseCorsOrigins, parseTrustProxy } from "./settings/Http.js"
export { consoleDirFromEnv, defaultConsoleDir } from "./settings/Console.js"
export { masterKeyFromEnv } from "./settings/MasterKey.js"
export { parseSwitch, positiveInt, readSetting } from "./settings/Read.js"
export { closingWithin, engineCloseTimeoutMillis } from "./Shutdown.js"
export { describeStore, type StoreChoice, storeChoiceFromEnv, storeLayer, storeName } from "./Store.js"
export * as WebhookSender from "./WebhookSender.js"
export type { WebhookSenderOptions } from "./WebhookSender.js"
