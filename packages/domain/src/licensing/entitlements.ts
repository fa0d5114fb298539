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
 * The last union taken of each license's own codes (by the array's identity: the validation cache hands out the
 * same license, and the same policy, until either changes), with the policy codes it was taken with. Code lists
 * are never changed in place (a change is a new license or policy), so a union is taken once per cache entry.
 */
const unions = new WeakMap<Entitlements, { readonly policy: Entitlements; readonly union: Entitlements }>()

/**
 * A license's effective entitlements: the sorted union of its own codes and its policy's (both sorted already).
 * When either side is empty the other is answered as it is; otherwise the same lists answer the same array,
 * taken once (this runs on every validate).
 */
export const effectiveEntitlements = (own: Entitlements, policy: Entitlements | undefined): Entitlements => {
  if (policy === undefined || policy.length === 0) return own
  if (own.length === 0) return policy
  const last = unions.get(own)
  if (last !== undefined && last.policy === policy) return last.union
  const union = sortedUnion(own, policy)
  unions.set(own, { policy, union })
  return union
}

const sortedUnion = (own: Entitlements, policy: Entitlements): Entitlements => {
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

/** The set of each list of held codes, made on first use (by the list's identity, as {@link unions}). */
const heldSets = new WeakMap<Entitlements, ReadonlySet<string>>()

const heldSet = (held: Entitlements): ReadonlySet<string> => {
  let set = heldSets.get(held)
  if (set === undefined) {
    set = new Set(held)
    heldSets.set(held, set)
  }
  return set
}

/** The required codes that `held` (sorted) lacks, in the order required; empty when every one is held. */
export const missingEntitlements = (held: Entitlements, required: ReadonlyArray<string> | undefined): Entitlements => {
  if (required === undefined || required.length === 0) return noCodes
  const set = heldSet(held)
  let missing: Array<string> | undefined
  for (const code of required) {
    if (!set.has(code)) (missing ??= []).push(code)
  }
  return missing ?? noCodes
}
