/**
 * The license state machine and the rules derived from it: reported status, seat ceiling, the actions of
 * CONTRACT §3 and renewal. Pure functions of (license, command, now); they return the new license and the
 * events the change causes, or the error the contract names.
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam, invalidTransition, type InvalidTransition } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import {
  type ConfirmationRequired,
  ConfirmationRequired as ConfirmationRequiredError,
  type LicenseTerminated,
  licenseTerminated
} from "./errors.js"
import { checkEntitlements } from "./entitlements.js"
import {
  type License,
  type LicenseDraft,
  type LicenseSettings,
  type LicenseSource,
  type LicenseStatus,
  type LicensingEventType,
  type OverageStrategy,
  type Policy,
  policySettingNames,
  type PolicySettings
} from "./model.js"

export const DAY_MS = 86_400_000

/** Defaults of CONTRACT §3 for a new license. */
export const defaultLicenseSettings: LicenseSettings = {
  productId: null,
  orderId: null,
  userId: null,
  maxActivations: null,
  overageStrategy: "deny",
  isFloating: false,
  leaseDuration: 600,
  requireHeartbeat: false,
  heartbeatInterval: 600,
  validForDays: null,
  expiresAt: null,
  graceDays: 0,
  meta: {},
  policyId: null,
  entitlements: []
}

/** Limits of a license's settings (CONTRACT §3, §14). */
export const settingLimits = {
  /** `lease_duration` and `heartbeat_interval`: 1 second to 365 days. */
  maxDurationSeconds: 31_536_000,
  /** `valid_for_days`, `grace_days` and renewal `days`: at most 100 years. */
  maxDays: 36_500,
  /** `max_activations`: a 32-bit integer. */
  maxActivations: 2_147_483_647,
  /** `meta`: its JSON text in UTF-8. */
  maxMetaBytes: 16 * 1024
} as const

const utf8 = new TextEncoder()

/**
 * The size of a value's JSON text in UTF-8 bytes; a value nested too deeply to write out (thousands of levels)
 * counts as infinitely large.
 */
export const jsonBytes = (value: unknown): number => {
  try {
    return utf8.encode(JSON.stringify(value)).length
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

const intIn = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max

/**
 * Checks the settings a create, update or generate sets against {@link settingLimits}; the first bad field is a
 * `rest_invalid_param` naming it.
 */
export const checkLicenseSettings = <S extends Partial<LicenseSettings>>(settings: S): Result.Result<S, InvalidParam> => {
  const { maxDurationSeconds, maxDays, maxActivations, maxMetaBytes } = settingLimits
  const bad = (field: string, problem: string) => Result.fail(invalidParam(field, problem))
  if (settings.leaseDuration !== undefined && !intIn(settings.leaseDuration, 1, maxDurationSeconds)) {
    return bad("lease_duration", `must be an integer from 1 to ${maxDurationSeconds}`)
  }
  if (settings.heartbeatInterval !== undefined && !intIn(settings.heartbeatInterval, 1, maxDurationSeconds)) {
    return bad("heartbeat_interval", `must be an integer from 1 to ${maxDurationSeconds}`)
  }
  if (settings.maxActivations != null && !intIn(settings.maxActivations, 0, maxActivations)) {
    return bad("max_activations", `must be null or an integer from 0 to ${maxActivations}`)
  }
  if (settings.validForDays != null && !intIn(settings.validForDays, 1, maxDays)) {
    return bad("valid_for_days", `must be null or an integer from 1 to ${maxDays}`)
  }
  if (settings.graceDays !== undefined && !intIn(settings.graceDays, 0, maxDays)) {
    return bad("grace_days", `must be an integer from 0 to ${maxDays}`)
  }
  if (settings.expiresAt != null && !Number.isFinite(settings.expiresAt)) return bad("expires_at", "must be a valid time")
  if (settings.meta !== undefined && jsonBytes(settings.meta) > maxMetaBytes) {
    return bad("meta", `must be at most ${maxMetaBytes} bytes of JSON`)
  }
  if (settings.entitlements !== undefined) {
    const codes = checkEntitlements("entitlements", settings.entitlements)
    return Result.isFailure(codes) ? Result.fail(codes.failure) : Result.succeed({ ...settings, entitlements: codes.success })
  }
  return Result.succeed(settings)
}

/** The moment after which the license is expired (`expires_at + grace_days`), or null when perpetual. */
export const expiryWithGrace = (license: Pick<License, "expiresAt" | "graceDays">): number | null =>
  license.expiresAt === null ? null : license.expiresAt + license.graceDays * DAY_MS

/** Whether the license is past its expiry and grace at `now`. */
export const isExpired = (license: Pick<License, "expiresAt" | "graceDays">, now: number): boolean => {
  const end = expiryWithGrace(license)
  return end !== null && now > end
}

/**
 * The status a license reports now: an action's state when one is set, else `expired`, `active` (it has a
 * machine holding a seat) or `inactive`.
 */
export const licenseStatus = (license: License, seatsHeld: number, now: number): LicenseStatus => {
  if (license.state !== "issued") return license.state
  if (isExpired(license, now)) return "expired"
  return seatsHeld > 0 ? "active" : "inactive"
}

/**
 * How many machines may hold a seat at once: the limit scaled by the overage strategy, or null when the
 * license is unlimited.
 */
export const seatCeiling = (maxActivations: number | null, strategy: OverageStrategy): number | null => {
  if (maxActivations === null) return null
  switch (strategy) {
    case "deny":
      return maxActivations
    case "allow_1_25x":
      return Math.floor((maxActivations * 5) / 4)
    case "allow_1_5x":
      return Math.floor((maxActivations * 3) / 2)
    case "allow_2x":
      return maxActivations * 2
  }
}

/** Whether one more machine may take a seat when `seatsHeld` are held. */
export const hasFreeSeat = (license: Pick<License, "maxActivations" | "overageStrategy">, seatsHeld: number): boolean => {
  const ceiling = seatCeiling(license.maxActivations, license.overageStrategy)
  return ceiling === null || seatsHeld < ceiling
}

/** The outcome of a license transition: the license as it is now and the events it caused (none for a no-op). */
export interface LicenseChange {
  readonly license: License
  readonly events: ReadonlyArray<DomainEvent>
  /** False when the action repeated the current state and nothing was written. */
  readonly changed: boolean
}

const event = (type: LicensingEventType, license: License, now: number, data: Record<string, unknown> = {}): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: license.id,
  machineId: null,
  data: { license_key: license.key, ...data }
})

const touched = (license: License, now: number, patch: Partial<License>): License => ({
  ...license,
  ...patch,
  updatedAt: now,
  revision: license.revision + 1
})

const unchanged = (license: License): LicenseChange => ({ license, events: [], changed: false })

/** The actions of CONTRACT §3 that move a license between states. */
export type LicenseAction = "suspend" | "revoke" | "reinstate" | "terminate"

/** Where each action is allowed from (besides its own target, which is a no-op). */
const allowedFrom: Record<Exclude<LicenseAction, "terminate">, ReadonlyArray<License["state"]>> = {
  suspend: ["issued"],
  revoke: ["issued", "suspended"],
  reinstate: ["suspended", "revoked"]
}

const targetOf: Record<LicenseAction, License["state"] | null> = {
  suspend: "suspended",
  revoke: "revoked",
  reinstate: null,
  terminate: "terminated"
}

const eventOf: Record<LicenseAction, LicensingEventType> = {
  suspend: "license.suspended",
  revoke: "license.revoked",
  reinstate: "license.reinstated",
  terminate: "license.terminated"
}

/**
 * Applies suspend, revoke or reinstate. Repeating suspend or revoke on a license already there is a no-op;
 * every write on a terminated license is `license_terminated`; other forbidden moves are `invalid_transition`
 * with the status reported now. `seatsHeld` is only used to name that status.
 */
export const applyLicenseAction = (
  license: License,
  action: Exclude<LicenseAction, "terminate">,
  now: number,
  seatsHeld: number
): Result.Result<LicenseChange, InvalidTransition | LicenseTerminated> => {
  if (license.state === "terminated") return Result.fail(licenseTerminated())
  const target = targetOf[action]
  if (target !== null && license.state === target) {
    // Suspending a license its subscription suspended makes the suspension the administrator's (no new event:
    // the status stays), so that the subscription's resume no longer lifts it.
    if (action === "suspend" && license.suspendedBy === "subscription") {
      return Result.succeed({ license: touched(license, now, { suspendedBy: "administrator" }), events: [], changed: true })
    }
    return Result.succeed(unchanged(license))
  }
  if (!allowedFrom[action].includes(license.state)) {
    return Result.fail(invalidTransition(licenseStatus(license, seatsHeld, now), action))
  }
  const next = touched(license, now, { state: target ?? "issued", suspendedBy: target === "suspended" ? "administrator" : null })
  return Result.succeed({ license: next, events: [event(eventOf[action], next, now, { from: license.state })], changed: true })
}

/**
 * Terminating is irreversible, so it needs the confirm flag (`confirm: true`), whatever the license; without it,
 * `confirmation_required`. The service checks it before anything else, {@link terminateLicense} again.
 */
export const confirmTermination = (confirm: boolean): Result.Result<void, ConfirmationRequired> =>
  confirm
    ? Result.void
    : Result.fail(new ConfirmationRequiredError({ message: "Terminating is irreversible: send {\"confirm\": true}." }))

/**
 * Terminates a license, irreversibly. Needs the confirm flag ({@link confirmTermination}); a repeat is a no-op.
 * The caller deactivates the machines (reason `license_terminated`) with `deactivateMachine`.
 */
export const terminateLicense = (
  license: License,
  confirm: boolean,
  now: number
): Result.Result<LicenseChange, ConfirmationRequired> => {
  const confirmed = confirmTermination(confirm)
  if (Result.isFailure(confirmed)) return Result.fail(confirmed.failure)
  if (license.state === "terminated") return Result.succeed(unchanged(license))
  const next = touched(license, now, { state: "terminated", suspendedBy: null })
  return Result.succeed({ license: next, events: [event("license.terminated", next, now, { from: license.state })], changed: true })
}

/** A renewal: an absolute expiry, an extension by days, or a reset of relative validity. */
export type Renewal =
  | { readonly _tag: "Until"; readonly expiresAt: number }
  | { readonly _tag: "ExtendDays"; readonly days: number }
  | { readonly _tag: "ResetRelative" }

/**
 * Renews a license. `ExtendDays` counts from the later of now and the current expiry (from now when
 * perpetual); `ResetRelative` sets `now + valid_for_days` and needs a relative validity.
 */
export const renewLicense = (
  license: License,
  renewal: Renewal,
  now: number
): Result.Result<LicenseChange, LicenseTerminated | InvalidParam> => {
  if (license.state === "terminated") return Result.fail(licenseTerminated())
  let expiresAt: number
  switch (renewal._tag) {
    case "Until":
      expiresAt = renewal.expiresAt
      break
    case "ExtendDays": {
      if (!intIn(renewal.days, 1, settingLimits.maxDays)) {
        return Result.fail(invalidParam("days", `must be an integer from 1 to ${settingLimits.maxDays}`))
      }
      const from = license.expiresAt === null ? now : Math.max(now, license.expiresAt)
      expiresAt = from + renewal.days * DAY_MS
      break
    }
    case "ResetRelative":
      if (license.validForDays === null) {
        return Result.fail(invalidParam("valid_for_days", "the license has no relative validity to reset; send expires_at or days"))
      }
      expiresAt = now + license.validForDays * DAY_MS
      break
  }
  const next = touched(license, now, { expiresAt })
  return Result.succeed({
    license: next,
    events: [event("license.renewed", next, now, { previous_expires_at: license.expiresAt, expires_at: expiresAt })],
    changed: true
  })
}

/** Changes the writable settings (PUT). Status is not among them; a terminated license refuses every change. */
export const updateLicense = (
  license: License,
  patch: Partial<LicenseSettings>,
  now: number
): Result.Result<LicenseChange, LicenseTerminated> => {
  if (license.state === "terminated") return Result.fail(licenseTerminated())
  const next = touched(license, now, patch)
  return Result.succeed({
    license: next,
    events: [event("license.updated", next, now, { fields: Object.keys(patch) })],
    changed: true
  })
}

/**
 * Records the first activation: sets `activated_at` and, for a license with relative validity and no expiry,
 * `expires_at = now + valid_for_days`. Later activations leave the license as it is.
 */
export const recordFirstActivation = (license: License, now: number): License => {
  if (license.activatedAt !== null) return license
  const expiresAt = license.validForDays !== null && license.expiresAt === null ? now + license.validForDays * DAY_MS : license.expiresAt
  return touched(license, now, { activatedAt: now, expiresAt })
}

/** A new license draft, `issued` unless said otherwise (a generator's pool keys are `pending`). */
export const newLicenseDraft = (
  key: string,
  settings: Partial<LicenseSettings>,
  source: LicenseSource,
  generatorId: number | null,
  now: number,
  state: License["state"] = "issued"
): LicenseDraft => ({
  key,
  state,
  ...defaultLicenseSettings,
  ...settings,
  activatedAt: null,
  source,
  generatorId,
  subscriptionId: null,
  suspendedBy: null,
  createdAt: now,
  updatedAt: now
})

/**
 * Draws a key from a generator's pool: the `pending` license (as `LicenseRepository.claimFromPool` answers it)
 * becomes `issued` with source `pool`, and is announced as created. It keeps the settings it was generated with
 * and its creation time; only `settings` (the create body's fields) change them.
 */
export const issueFromPool = (pooled: License, settings: Partial<LicenseSettings>, now: number): LicenseChange => {
  const next = touched(pooled, now, { ...settings, state: "issued", source: "pool" })
  return { license: next, events: [licenseCreated(next, now)], changed: true }
}

/** The event for a new license. */
export const licenseCreated = (license: License, now: number): DomainEvent => event("license.created", license, now, { source: license.source })

/** The event for a deleted license. */
export const licenseDeleted = (license: License, now: number): DomainEvent => event("license.deleted", license, now)

/** A policy's license settings (the License fields of the same names). */
export const settingsOfPolicy = (policy: PolicySettings): PolicySettings =>
  Object.fromEntries(policySettingNames.map((name) => [name, policy[name]])) as unknown as PolicySettings

/**
 * The settings a policy gives a license created with it or moved to it, under the body's fields (CONTRACT §15):
 * its settings, its product when it names one, and the reference to it.
 */
export const policyDefaults = (policy: Policy): Partial<LicenseSettings> => ({
  ...settingsOfPolicy(policy),
  ...(policy.productId !== null ? { productId: policy.productId } : {}),
  policyId: policy.id
})
