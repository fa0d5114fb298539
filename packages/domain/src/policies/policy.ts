/**
 * The policies feature's rules (CONTRACT §15): a policy's input checked, the defaults it gives a license created
 * with it or moved to it (the body's fields win, as with generator defaults), and `apply`, which copies its
 * settings into a license of it.
 */
import { Result } from "effect"
import { checkLicenseSettings, defaultLicenseSettings, policyDefaults, settingsOfPolicy } from "../licensing/license.js"
import { type License, type LicenseSettings, type Policy, type PolicyDraft, policySettingNames, type PolicySettings } from "../licensing/model.js"
import { invalidParam, type InvalidParam } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { checkEntitlements } from "../licensing/entitlements.js"
import { MAX_POLICY_NAME } from "./model.js"


/** A new policy's settings when the body leaves them out: the License defaults of the same names. */
export const defaultPolicySettings: PolicySettings = Object.fromEntries(
  policySettingNames.map((name) => [name, defaultLicenseSettings[name]])
) as unknown as PolicySettings

/** The fields a policy create or update may set. */
export type PolicyInput = {
  readonly [K in Exclude<keyof PolicyDraft, "createdAt" | "updatedAt">]?: PolicyDraft[K] | undefined
}

/** Checks a policy as it would be written: its name, settings and codes (sorted, without repeats). */
export const checkPolicy = (draft: PolicyDraft): Result.Result<PolicyDraft, InvalidParam> => {
  const name = draft.name.trim()
  if (name.length < 1 || name.length > MAX_POLICY_NAME) {
    return Result.fail(invalidParam("name", `must be 1 to ${MAX_POLICY_NAME} characters`))
  }
  const settings = checkLicenseSettings(settingsOfPolicy(draft))
  if (Result.isFailure(settings)) return Result.fail(settings.failure)
  const codes = checkEntitlements("entitlements", draft.entitlements)
  if (Result.isFailure(codes)) return Result.fail(codes.failure)
  return Result.succeed({ ...draft, name, entitlements: codes.success })
}

/**
 * `apply` on one license of the policy: its settings copied in. Null when nothing would change (the license has
 * them already) or the license is terminated (it refuses every write); else the license and its event.
 */
export const applyPolicy = (
  license: License,
  policy: Policy,
  now: number
): { readonly license: License; readonly events: ReadonlyArray<DomainEvent> } | null => {
  if (license.state === "terminated") return null
  const copied = policyDefaults(policy)
  const fields = (Object.keys(copied) as Array<keyof LicenseSettings>).filter((name) => license[name] !== copied[name])
  if (fields.length === 0) return null
  const next: License = { ...license, ...copied, updatedAt: now, revision: license.revision + 1 }
  return {
    license: next,
    events: [{
      type: "license.updated",
      occurredAt: now,
      licenseId: license.id,
      machineId: null,
      data: { license_key: license.key, fields, policy_id: policy.id }
    }]
  }
}

/** A policy event: `policy.created`, `policy.updated` or `policy.deleted`. */
export const policyEvent = (type: "policy.created" | "policy.updated" | "policy.deleted", policy: Policy, now: number): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: null,
  machineId: null,
  data: { policy_id: policy.id, name: policy.name, entitlements: policy.entitlements }
})
