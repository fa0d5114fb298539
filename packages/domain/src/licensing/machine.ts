/**
 * Machines (devices) and their seats: the one predicate "holds a seat at time t", activation, deactivation,
 * heartbeats, revocation and the sweep's verdict. Pure functions; the services persist what they return.
 */
import { Result } from "effect"
import type { DomainEvent } from "../shared/model.js"
import type { RefusalCode } from "./errors.js"
import { machineInactive, type MachineInactive, MachineLimitExceeded, type Refused, refused } from "./errors.js"
import { hasFreeSeat, isExpired, licenseStatus, recordFirstActivation, seatCeiling } from "./license.js"
import type {
  ComponentDraft,
  DeactivationReason,
  License,
  LicenseStatus,
  LicensingEventType,
  Machine,
  MachineDraft,
  MachineFacts
} from "./model.js"

type SeatRules = Pick<License, "isFloating" | "leaseDuration" | "requireHeartbeat" | "heartbeatInterval">

/**
 * When the machine stops holding a seat unless it beats again: the end of its floating lease and, when the
 * license requires heartbeats, two intervals after its last beat (or its activation). Null when never.
 */
export const seatDeadline = (
  machine: Pick<Machine, "activatedAt" | "lastHeartbeatAt" | "leaseExpiresAt">,
  license: SeatRules
): number | null => {
  let deadline: number | null = null
  if (license.isFloating && machine.leaseExpiresAt !== null) deadline = machine.leaseExpiresAt
  if (license.requireHeartbeat) {
    const heartbeatDeadline = (machine.lastHeartbeatAt ?? machine.activatedAt) + 2 * license.heartbeatInterval * 1000
    deadline = deadline === null ? heartbeatDeadline : Math.min(deadline, heartbeatDeadline)
  }
  return deadline
}

/** Whether an active machine with this seat deadline (null: none) still holds its seat at `now`. */
const beforeDeadline = (deadline: number | null, now: number): boolean => deadline === null || now < deadline

/**
 * Whether a machine holds a seat at `now`: it is active, its floating lease has not run out and its heartbeat
 * has not died. Every seat check and the sweep use this, so a dead machine never holds a seat, swept or not.
 */
export const holdsSeat = (machine: Machine, license: SeatRules, now: number): boolean =>
  machine.status === "active" && beforeDeadline(seatDeadline(machine, license), now)

/**
 * {@link holdsSeat} by the seat deadline stored with the machine (`Machine.seatDeadline`, which every write keeps
 * equal to {@link seatDeadline}), so without the license's seat rules: how stores find and count seat holders.
 * The SQL stores write it once (`storage-pg`'s `repositories/seats.ts`), tested against {@link holdsSeat}.
 */
export const holdsSeatByDeadline = (machine: Pick<Machine, "status" | "seatDeadline">, now: number): boolean =>
  machine.status === "active" && beforeDeadline(machine.seatDeadline, now)

/** How many of `machines` hold a seat at `now`. */
export const countSeatsHeld = (machines: ReadonlyArray<Machine>, license: SeatRules, now: number): number => {
  let held = 0
  for (const machine of machines) if (holdsSeat(machine, license, now)) held++
  return held
}

/** A license as it reports itself now: its derived status and how many machines hold a seat. */
export interface LicenseView {
  readonly license: License
  readonly status: LicenseStatus
  readonly activationCount: number
  /**
   * Its effective entitlement codes (its own and its policy's, sorted), when the service looked up its policy;
   * absent, the license's own codes are all there is.
   */
  readonly effectiveEntitlements?: ReadonlyArray<string> | undefined
}

/**
 * The license as it reports itself at `now`, given its machines (those not holding a seat are not counted):
 * what every service answers about a license and the wire's license object is written from.
 */
export const viewLicense = (license: License, machines: ReadonlyArray<Machine>, now: number): LicenseView => {
  const activationCount = countSeatsHeld(machines, license, now)
  return { license, status: licenseStatus(license, activationCount, now), activationCount }
}

/**
 * Why the license itself refuses a client call, in the contract's order (blacklisted, terminated, revoked,
 * suspended, pending, expired), or null when it does not.
 */
export const licenseRefusal = (license: License, now: number, blacklisted: boolean): RefusalCode | null => {
  if (blacklisted) return "blacklisted"
  switch (license.state) {
    case "terminated":
      return "license_terminated"
    case "revoked":
      return "license_revoked"
    case "suspended":
      return "license_suspended"
    case "pending":
      return "license_pending"
    case "issued":
      return isExpired(license, now) ? "license_expired" : null
  }
}

const machineEvent = (type: LicensingEventType, license: License, machine: Machine, now: number, data: Record<string, unknown> = {}): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: license.id,
  machineId: machine.id,
  data: { license_key: license.key, fingerprint: machine.fingerprint, ...data }
})

/** What an activation does to the store. */
export type ActivationPlan =
  /** The fingerprint already holds a seat: nothing changes (200). */
  | { readonly _tag: "AlreadyActive"; readonly machine: Machine }
  /** A new record takes a seat (201). */
  | { readonly _tag: "Insert"; readonly draft: MachineDraft; readonly license: License }
  /** An earlier record of that fingerprint takes a seat again (201). */
  | {
    readonly _tag: "Reactivate"
    readonly machine: Machine
    readonly license: License
    /** Components to put in place of the old ones, when the client sent them. */
    readonly components: ReadonlyArray<ComponentDraft> | undefined
  }

const factsPatch = (facts: MachineFacts) => ({
  ...(facts.name !== undefined ? { name: facts.name } : {}),
  ...(facts.hostname !== undefined ? { hostname: facts.hostname } : {}),
  ...(facts.platform !== undefined ? { platform: facts.platform } : {}),
  ...(facts.appVersion !== undefined ? { appVersion: facts.appVersion } : {}),
  ...(facts.ipAddress !== undefined ? { ipAddress: facts.ipAddress } : {}),
  ...(facts.meta !== undefined ? { meta: facts.meta } : {})
})

/**
 * Plans an activation of `facts.fingerprint` on `license`, given the license's machines in `active` status and
 * the record of that fingerprint, if any. Refusals in the contract's order, then the seat check against the
 * ceiling. The first activation also records `activated_at` and starts relative validity.
 */
export const planActivation = (input: {
  readonly license: License
  readonly activeMachines: ReadonlyArray<Machine>
  readonly existing: Machine | undefined
  readonly facts: MachineFacts
  readonly now: number
  readonly blacklisted: boolean
}): Result.Result<ActivationPlan, Refused | MachineLimitExceeded> => {
  const { license, existing, facts, now } = input
  const refusal = licenseRefusal(license, now, input.blacklisted)
  if (refusal !== null) return Result.fail(refused(refusal))
  if (existing?.status === "revoked") return Result.fail(refused("machine_revoked"))
  if (existing !== undefined && holdsSeat(existing, license, now)) return Result.succeed({ _tag: "AlreadyActive", machine: existing })
  const held = countSeatsHeld(input.activeMachines, license, now)
  if (!hasFreeSeat(license, held)) {
    return Result.fail(
      new MachineLimitExceeded({
        message: "No seat is free on this license.",
        max_activations: license.maxActivations,
        activation_count: held,
        ceiling: seatCeiling(license.maxActivations, license.overageStrategy)
      })
    )
  }
  const activated = recordFirstActivation(license, now)
  const timing = {
    status: "active" as const,
    activatedAt: now,
    deactivatedAt: null,
    deactivationReason: null,
    lastHeartbeatAt: null,
    leaseExpiresAt: license.isFloating ? now + license.leaseDuration * 1000 : null
  }
  const seat = { ...timing, seatDeadline: seatDeadline(timing, license) }
  if (existing !== undefined) {
    const machine: Machine = { ...existing, ...factsPatch(facts), ...seat }
    return Result.succeed({ _tag: "Reactivate", machine, license: activated, components: facts.components })
  }
  const draft: MachineDraft = {
    licenseId: license.id,
    fingerprint: facts.fingerprint,
    name: facts.name ?? null,
    hostname: facts.hostname ?? null,
    platform: facts.platform ?? null,
    appVersion: facts.appVersion ?? null,
    ipAddress: facts.ipAddress ?? null,
    meta: facts.meta ?? {},
    components: facts.components ?? [],
    createdAt: now,
    ...seat
  }
  return Result.succeed({ _tag: "Insert", draft, license: activated })
}

/** The event of a machine that took a seat. */
export const machineActivated = (license: License, machine: Machine, now: number): DomainEvent =>
  machineEvent("machine.activated", license, machine, now)

/** The outcome of a machine transition. */
export interface MachineChange {
  readonly machine: Machine
  readonly events: ReadonlyArray<DomainEvent>
  readonly changed: boolean
}

const deactivationEvent: Record<DeactivationReason, LicensingEventType> = {
  client: "machine.deactivated",
  admin: "machine.deactivated",
  license_terminated: "machine.deactivated",
  heartbeat_dead: "machine.culled",
  lease_expired: "machine.lease_expired"
}

/**
 * Deactivates a machine and frees its seat. A machine already inactive or revoked is left as it is (the caller
 * answers the same 200).
 */
export const deactivateMachine = (license: License, machine: Machine, reason: DeactivationReason, now: number): MachineChange => {
  if (machine.status !== "active") return { machine, events: [], changed: false }
  const next: Machine = { ...machine, status: "inactive", deactivatedAt: now, deactivationReason: reason, seatDeadline: null }
  return { machine: next, events: [machineEvent(deactivationEvent[reason], license, next, now, { reason })], changed: true }
}

/** Revokes a machine: its seat is freed and its fingerprint can never activate on the license again. */
export const revokeMachine = (license: License, machine: Machine, now: number): MachineChange => {
  if (machine.status === "revoked") return { machine, events: [], changed: false }
  const wasActive = machine.status === "active"
  const next: Machine = {
    ...machine,
    status: "revoked",
    deactivatedAt: wasActive ? now : machine.deactivatedAt,
    deactivationReason: wasActive ? "admin" : machine.deactivationReason,
    seatDeadline: null
  }
  return { machine: next, events: [machineEvent("machine.revoked", license, next, now)], changed: true }
}

/** The timing a successful heartbeat reports. */
export interface Beat {
  readonly machine: Machine
  readonly nextHeartbeatBefore: number
  readonly leaseExpiresAt: number | null
}

/**
 * Records a heartbeat: refusals of the license first, then a revoked machine (403) and a machine that no
 * longer holds a seat (409, no resurrection). Renews a floating lease.
 */
export const recordHeartbeat = (input: {
  readonly license: License
  readonly machine: Machine
  readonly appVersion: string | undefined
  readonly now: number
  readonly blacklisted: boolean
}): Result.Result<Beat, Refused | MachineInactive> => {
  const { license, machine, now } = input
  const refusal = licenseRefusal(license, now, input.blacklisted)
  if (refusal !== null) return Result.fail(refused(refusal))
  if (machine.status === "revoked") return Result.fail(refused("machine_revoked"))
  if (!holdsSeat(machine, license, now)) return Result.fail(machineInactive())
  const timing = {
    activatedAt: machine.activatedAt,
    lastHeartbeatAt: now,
    leaseExpiresAt: license.isFloating ? now + license.leaseDuration * 1000 : machine.leaseExpiresAt
  }
  const next: Machine = {
    ...machine,
    ...timing,
    ...(input.appVersion !== undefined ? { appVersion: input.appVersion } : {}),
    seatDeadline: seatDeadline(timing, license)
  }
  const interval = now + license.heartbeatInterval * 1000
  const nextHeartbeatBefore = license.isFloating && next.leaseExpiresAt !== null ? Math.min(interval, next.leaseExpiresAt) : interval
  return Result.succeed({ machine: next, nextHeartbeatBefore, leaseExpiresAt: license.isFloating ? next.leaseExpiresAt : null })
}

/**
 * The sweep's verdict on an active machine: the reason to deactivate it (`lease_expired` when its floating lease
 * ran out, else `heartbeat_dead`), or null when it still holds its seat.
 */
export const sweepReason = (machine: Machine, license: License, now: number): "lease_expired" | "heartbeat_dead" | null => {
  if (machine.status !== "active" || holdsSeat(machine, license, now)) return null
  if (license.isFloating && machine.leaseExpiresAt !== null && now >= machine.leaseExpiresAt) return "lease_expired"
  return "heartbeat_dead"
}

/**
 * Brings the license's active machines in line with its seat rules after they changed: a machine of a license
 * that became floating gets a lease from now (else it would hold its seat for ever); one of a license that is no
 * longer floating loses its lease; and each stored seat deadline is recomputed. Returns the machines that changed.
 */
export const refreshSeatDeadlines = (machines: ReadonlyArray<Machine>, license: SeatRules, now: number): ReadonlyArray<Machine> =>
  machines.flatMap((machine) => {
    if (machine.status !== "active") return []
    const leaseExpiresAt = !license.isFloating
      ? null
      : machine.leaseExpiresAt ?? now + license.leaseDuration * 1000
    const next = { ...machine, leaseExpiresAt }
    const deadline = seatDeadline(next, license)
    return deadline === machine.seatDeadline && leaseExpiresAt === machine.leaseExpiresAt ? [] : [{ ...next, seatDeadline: deadline }]
  })
