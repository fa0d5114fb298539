/**
 * `@lm/client/node` — the Node-only helpers: a file storage, the machine fingerprint and a file download target.
 */
export { fileStorage } from "./fileStorage.js"
export { fileTarget } from "./fileTarget.js"
export { fingerprintOf, linuxMachineIdFiles, machineFingerprint, machineId } from "./fingerprint.js"
