/**
 * `@lm/server`: the bundled server application (`lm`), for the tests and benchmarks that start it in-process:
 * the composition of the engine, a store and the HTTP adapter, with the settings read from the environment.
 */
export * from "./App.js"
export * as FileArtifactStore from "./artifacts/FileArtifactStore.js"
export * as S3ArtifactStore from "./artifacts/S3ArtifactStore.js"
export { runServer } from "./Main.js"
export { layerRedisRateLimits } from "./RedisRateLimits.js"
export * as WebhookSender from "./WebhookSender.js"
export type { WebhookSenderOptions } from "./WebhookSender.js"
