/**
 * @lm/domain — the licensing engine: business rules as pure functions, services that orchestrate them over
 * ports, and the errors and events of the contract. Depends on `effect` only (plus node:crypto and
 * @noble/ed25519 for signing); stores and the HTTP adapter plug in from outside.
 */
export const version = "0.1.0"

export * from "./errors.js"
export * from "./keys.js"
export * from "./license.js"
export * from "./machine.js"
export * from "./model.js"
export * from "./ports.js"
export * from "./random.js"
export * from "./validation.js"
export * from "./services/ActivityRecorder.js"
export * from "./services/ApiKeys.js"
export * from "./services/Blacklist.js"
export * from "./services/Generators.js"
export * from "./services/Licenses.js"
export * from "./services/Licensing.js"
export * from "./services/Machines.js"
export * from "./services/Sweeper.js"
export * from "./services/index.js"
export * as Token from "./signing/Token.js"
export * from "./signing/SigningKey.js"
export * from "./signing/Signer.js"
export type { KeySet, VerifyFailure, VerifyResult } from "./verify/index.js"
export * from "./services/SigningKeys.js"
export * from "./services/Tokens.js"
export * from "./services/RevocationList.js"
export { type SeatBatchOptions, SeatBatchSettings } from "./services/SeatBatches.js"
export * from "./services/ValidationCache.js"
