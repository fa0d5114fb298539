/**
 * `@lm/client` — the client library of the Licensing Service. Fetch only, no node: modules (Node-only helpers are
 * in `@lm/client/node`): runs in Node, browsers, Deno and Bun.
 *
 * - `createClient({ baseUrl })`: the public routes as Promises, failures as {@link LmError}.
 * - `LmApi` / `makeApiClient`: the typed client of every route, for Effect users, derived from the API definition.
 * - `createLicensedApp(...)`: pinned trusted keys and product, activate, validate (nonce and signature checked,
 *   the server's clock measured), heartbeat loop, offline `entitlement()`, update checks and checked downloads,
 *   deactivate.
 * - Storages: `memoryStorage()`, `localStorageStorage()`; `fileStorage(path)` in `@lm/client/node`.
 */
export { type ConnectionOptions, LmApi, type LmApiClient, makeApiClient, restBase } from "./api.js"
export {
  type ActivatedMachine,
  type ActivateInput,
  createClient,
  type CrlResponse,
  type DeactivateInput,
  type DeactivateResponse,
  type HeartbeatInput,
  type HeartbeatResponse,
  type LmClient,
  type PublicKeyResponse,
  type UpdateCheckInput,
  type UpdateCheckResponse,
  type ValidateInput,
  type ValidateResponse
} from "./client.js"
export {
  createLicensedApp,
  type HeartbeatLoop,
  type HeartbeatOptions,
  type HeartbeatStop,
  type LicensedApp,
  type LicensedAppOptions,
  type Validation
} from "./app.js"
export {
  checkEntitlement,
  DEFAULT_MAX_CRL_AGE_SECONDS,
  type Entitlement,
  type EntitlementOptions,
  type NotEntitledReason,
  notEntitledReasons,
  type OfflineState,
  serverTimeOf
} from "./entitlement.js"
export { type ClientErrorCode, clientErrorCodes, LmError } from "./errors.js"
export { localStorageStorage, memoryStorage, type Storage, type WebStorage } from "./storage.js"
export { type AvailableUpdate, blobTarget, type DownloadTarget, downloadUpdate, type UpdateCheck } from "./updates.js"
export { type Release } from "./api.js"
export { normaliseLicenseKey, type TrustedKey } from "@lm/domain/verify"
