/**
 * Decode options of the API's endpoints, in a module of their own so that group definitions can use them
 * without importing `Api.ts` (which imports the groups).
 */

/** Decode options for every endpoint: report every bad field, not just the first. */
export const parseOptions = { errors: "all" } as const

/** Decode options for management writes: also reject unknown body fields (CONTRACT §14). */
export const strictPayloadOptions = { errors: "all", onExcessProperty: "error" } as const
