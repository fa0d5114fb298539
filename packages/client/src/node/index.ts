/**
 * `@lm/client/node` — the Node-only helpers: a file storage and the machine fingerprint.
 */
export { fileStorage } from "./fileStorage.js"
export { fingerprintOf, linuxMachineIdFiles, machineFingerprint, machineId } from "./fingerprint.js"
