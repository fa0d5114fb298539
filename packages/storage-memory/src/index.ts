/**
 * @lm/storage-memory — every port of `@lm/domain` in memory, for embedding and tests. NOT DURABLE: the data
 * lives as long as the layer. Provide `MemoryStore.layer` to the domain's services.
 */
export * as MemoryStore from "./MemoryStore.js"
export { DeadlockDetected } from "./Database.js"
export * as SharedRateLimits from "./SharedRateLimits.js"
