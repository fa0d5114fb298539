/**
 * The rules of entitlement codes (CONTRACT §15): what a code looks like, how many one holder carries, the
 * effective set of a license (the union of its own codes and its policy's), and which required codes are missing.
 * Sets of codes are kept sorted and without repeats, so that they compare, sign and union cheaply.
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam } from "../shared/errors.js"
import { entitlementCodePattern, type Entitlements, MAX_ENTITLEMENTS } from "./model.js"

const noCodes: Entitlements = []

/** Sorted, without repeats. */
export const normaliseCodes = (codes: ReadonlyArray<string>): Entitlements => [...new Set(codes)].sort()

/**
 * Checks the codes a policy, license, release or validate request gives under `field`: each one a code, at most
 * {@link MAX_ENTITLEMENTS}; answers them sorted and without repeats.
 */
export const checkEntitlements = (field: string, codes: ReadonlyArray<string>): Result.Result<Entitlements, InvalidParam> => {
  const bad = codes.find((code) => typeof code !== "string" || !entitlementCodePattern.test(code))
  if (bad !== undefined) {
    return Result.fail(invalidParam(field, `${JSON.stringify(bad)} is not an entitlement code (${entitlementCodePattern.source})`))
  }
  const set = normaliseCodes(codes)
  if (set.length > MAX_ENTITLEMENTS) return Result.fail(invalidParam(field, `must hold at most ${MAX_ENTITLEMENTS} codes`))
  return Result.succeed(set)
}

/**
 * A license's effective entitlements: the sorted union of its own codes and its policy's (both sorted already).
 * When either side is empty the other is answered as it is (no copy: this runs on every validate).
 */
export const effectiveEntitlements = (own: Entitlements, policy: Entitlements | undefined): Entitlements => {
  if (policy === undefined || policy.length === 0) return own
  if (own.length === 0) return policy
  const out: Array<string> = []
  let i = 0
  let j = 0
  while (i < own.length || j < policy.length) {
    const a = own[i]
    const b = policy[j]
    if (b === undefined || (a !== undefined && a < b)) {
      out.push(a!)
      i++
    } else if (a === undefined || b < a) {
      out.push(b)
      j++
    } else {
      out.push(a)
      i++
      j++
    }
  }
  return out
}

/** The required codes that `held` (sorted) lacks, in the order required; empty when every one is held. */
export const missingEntitlements = (held: Entitlements, required: ReadonlyArray<string> | undefined): Entitlements => {
  if (required === undefined || required.length === 0) return noCodes
  const missing = required.filter((code) => !held.includes(code))
  return missing.length === 0 ? noCodes : missing
}
