/**
 * Validation (POST /validate) as one pure function: the ordered codes of CONTRACT §4, first failure wins.
 */
import { missingEntitlements } from "./entitlements.js"
import type { RefusalCode } from "./errors.js"
import { hasFreeSeat, seatCeiling } from "./license.js"
import { holdsSeat, licenseRefusal, viewLicense } from "./machine.js"
import type { License, LicenseStatus, Machine } from "./model.js"

/** Every code validation can answer, in the order it checks them. */
export const validationCodes = [
  "blacklisted",
  "license_terminated",
  "license_revoked",
  "license_suspended",
  "license_pending",
  "license_expired",
  "entitlements_missing",
  "machine_limit_exceeded",
  "machine_revoked",
  "fingerprint_not_activated",
  "valid"
] as const
export type ValidationCode = (typeof validationCodes)[number]

/** What validation found. */
export interface Validation {
  readonly valid: boolean
  readonly code: ValidationCode
  /** The status the license reports now (as {@link viewLicense} reports it). */
  readonly status: LicenseStatus
  /** The active machine of the fingerprint sent, or null. */
  readonly machine: Machine | null
  /** True when the fingerprint is not activated and a seat is free for it. */
  readonly needsActivation: boolean
  readonly seatsHeld: number
  readonly ceiling: number | null
  /** The license's effective entitlement codes (its own and its policy's, sorted). */
  readonly entitlements: ReadonlyArray<string>
  /** With `entitlements_missing`: the codes asked for that the license does not hold; else empty. */
  readonly missing: ReadonlyArray<string>
}

/**
 * Validates a license at `now`. `machines` are the license's machines in `active` status plus, when a
 * fingerprint is sent, that fingerprint's record in any status. A license above its ceiling answers
 * `machine_limit_exceeded` even for one of its active machines (the order is literal). `entitlements` are the
 * license's effective codes and `required` the ones the client asked for: after the license checks and before
 * the machine checks, a code not held answers `entitlements_missing` (CONTRACT §15).
 */
export const validateLicense = (input: {
  readonly license: License
  readonly machines: ReadonlyArray<Machine>
  readonly fingerprint: string | null
  readonly now: number
  readonly blacklisted: boolean
  readonly entitlements?: ReadonlyArray<string> | undefined
  readonly required?: ReadonlyArray<string> | undefined
}): Validation => {
  const { license, now, fingerprint } = input
  const { status, activationCount: seatsHeld } = viewLicense(license, input.machines, now)
  const ceiling = seatCeiling(license.maxActivations, license.overageStrategy)
  const entitlements = input.entitlements ?? license.entitlements
  let missing: ReadonlyArray<string> = []
  const result = (code: ValidationCode, machine: Machine | null = null, needsActivation = false): Validation => ({
    valid: code === "valid",
    code,
    status,
    machine,
    needsActivation,
    seatsHeld,
    ceiling,
    entitlements,
    missing
  })
  const refusal: RefusalCode | null = licenseRefusal(license, now, input.blacklisted)
  if (refusal !== null) return result(refusal)
  missing = missingEntitlements(entitlements, input.required)
  if (missing.length > 0) return result("entitlements_missing")
  if (ceiling !== null && seatsHeld > ceiling) return result("machine_limit_exceeded")
  if (fingerprint === null) return result("valid")
  let record: Machine | undefined
  for (const machine of input.machines) {
    if (machine.fingerprint !== fingerprint) continue
    if (machine.status === "revoked") return result("machine_revoked")
    if (holdsSeat(machine, license, now)) record = machine
  }
  if (record === undefined) return result("fingerprint_not_activated", null, hasFreeSeat(license, seatsHeld))
  return result("valid", record)
}
