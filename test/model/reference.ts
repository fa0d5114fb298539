/**
 * A small reference model of one license and its machines, written from CONTRACT §3, §4, §7 and §14 without the
 * domain's functions. The model-based test runs the same steps against the services and this model and
 * compares what each answers after every step.
 */

const DAY = 86_400_000

export type ModelState = "issued" | "suspended" | "revoked" | "terminated"
export type ModelStrategy = "deny" | "allow_1_25x" | "allow_1_5x" | "allow_2x"

/** The license settings the model needs (seconds for durations, as on the wire). */
export interface ModelSettings {
  readonly maxActivations: number | null
  readonly overageStrategy: ModelStrategy
  readonly isFloating: boolean
  readonly leaseDuration: number
  readonly requireHeartbeat: boolean
  readonly heartbeatInterval: number
  readonly validForDays: number | null
  readonly graceDays: number
}

export interface ModelMachine {
  readonly id: number
  status: "active" | "inactive" | "revoked"
  activatedAt: number
  lastBeatAt: number | null
  leaseEndsAt: number | null
}

/** What a call answers: success, or the error's `_tag` and `code`. */
export type Outcome =
  | { readonly ok: true; readonly created?: boolean; readonly machineId?: number }
  | { readonly ok: false; readonly tag: string; readonly code?: string }

const ok = (extra: { created?: boolean; machineId?: number } = {}): Outcome => ({ ok: true, ...extra })
const fail = (tag: string, code?: string): Outcome => (code === undefined ? { ok: false, tag } : { ok: false, tag, code })

/** `floor(max × factor)`: 1, 1.25, 1.5 or 2 by strategy; null when unlimited. */
export const ceilingOf = (max: number | null, strategy: ModelStrategy): number | null => {
  if (max === null) return null
  const factor = { deny: 1, allow_1_25x: 1.25, allow_1_5x: 1.5, allow_2x: 2 }[strategy]
  return Math.floor(max * factor)
}

export class LicenseModel {
  state: ModelState = "issued"
  expiresAt: number | null
  activatedAt: number | null = null
  readonly machines = new Map<string, ModelMachine>()

  readonly settings: ModelSettings
  now: number

  constructor(settings: ModelSettings, expiresAt: number | null, now: number) {
    this.settings = settings
    this.now = now
    this.expiresAt = expiresAt
  }

  get ceiling(): number | null {
    return ceilingOf(this.settings.maxActivations, this.settings.overageStrategy)
  }

  /** CONTRACT §3, §7: active, lease not run out, heartbeat not dead (2 × interval since the last beat or activation). */
  holds(machine: ModelMachine): boolean {
    if (machine.status !== "active") return false
    if (this.settings.isFloating && machine.leaseEndsAt !== null && this.now >= machine.leaseEndsAt) return false
    if (this.settings.requireHeartbeat && this.now >= (machine.lastBeatAt ?? machine.activatedAt) + 2 * this.settings.heartbeatInterval * 1000) {
      return false
    }
    return true
  }

  get seatsHeld(): number {
    let n = 0
    for (const machine of this.machines.values()) if (this.holds(machine)) n++
    return n
  }

  get expired(): boolean {
    return this.expiresAt !== null && this.now > this.expiresAt + this.settings.graceDays * DAY
  }

  /** The status the license reports now. */
  get status(): string {
    if (this.state !== "issued") return this.state
    if (this.expired) return "expired"
    return this.seatsHeld > 0 ? "active" : "inactive"
  }

  /** The license's own refusal code (§4), or null. */
  private refusal(): string | null {
    switch (this.state) {
      case "terminated":
        return "license_terminated"
      case "revoked":
        return "license_revoked"
      case "suspended":
        return "license_suspended"
      case "issued":
        return this.expired ? "license_expired" : null
    }
  }

  advance(ms: number): void {
    this.now += ms
  }

  activate(fingerprint: string, newId: () => number): Outcome {
    const refusal = this.refusal()
    if (refusal !== null) return fail("Refused", refusal)
    const existing = this.machines.get(fingerprint)
    if (existing?.status === "revoked") return fail("Refused", "machine_revoked")
    if (existing !== undefined && this.holds(existing)) return ok({ created: false, machineId: existing.id })
    const ceiling = this.ceiling
    if (ceiling !== null && this.seatsHeld >= ceiling) return fail("MachineLimitExceeded", "machine_limit_exceeded")
    if (this.activatedAt === null) {
      this.activatedAt = this.now
      if (this.settings.validForDays !== null && this.expiresAt === null) this.expiresAt = this.now + this.settings.validForDays * DAY
    }
    const machine: ModelMachine = {
      id: existing?.id ?? newId(),
      status: "active",
      activatedAt: this.now,
      lastBeatAt: null,
      leaseEndsAt: this.settings.isFloating ? this.now + this.settings.leaseDuration * 1000 : null
    }
    this.machines.set(fingerprint, machine)
    return ok({ created: true, machineId: machine.id })
  }

  /** Client deactivation: any license state; an inactive or revoked machine answers the same 200. */
  deactivate(fingerprint: string): Outcome {
    const machine = this.machines.get(fingerprint)
    if (machine === undefined) return fail("MachineNotFound", "machine_not_found")
    if (machine.status === "active") machine.status = "inactive"
    return ok({ machineId: machine.id })
  }

  heartbeat(fingerprint: string): Outcome {
    const machine = this.machines.get(fingerprint)
    if (machine === undefined) return fail("MachineNotFound", "machine_not_found")
    const refusal = this.refusal()
    if (refusal !== null) return fail("Refused", refusal)
    if (machine.status === "revoked") return fail("Refused", "machine_revoked")
    if (!this.holds(machine)) return fail("MachineInactive", "machine_inactive")
    machine.lastBeatAt = this.now
    if (this.settings.isFloating) machine.leaseEndsAt = this.now + this.settings.leaseDuration * 1000
    return ok({ machineId: machine.id })
  }

  revokeMachine(fingerprint: string): Outcome {
    const machine = this.machines.get(fingerprint)
    if (machine === undefined) return fail("MachineNotFound", "machine_not_found")
    machine.status = "revoked"
    return ok({ machineId: machine.id })
  }

  /** The background sweep: active machines that no longer hold a seat become inactive. */
  sweep(): number {
    let n = 0
    for (const machine of this.machines.values()) {
      if (machine.status === "active" && !this.holds(machine)) {
        machine.status = "inactive"
        n++
      }
    }
    return n
  }

  /** suspend / revoke / reinstate (§3, §14). */
  action(action: "suspend" | "revoke" | "reinstate"): Outcome {
    if (this.state === "terminated") return fail("LicenseTerminated", "license_terminated")
    const moves: Record<typeof action, { from: ReadonlyArray<ModelState>; to: ModelState; noop: ModelState | null }> = {
      suspend: { from: ["issued"], to: "suspended", noop: "suspended" },
      revoke: { from: ["issued", "suspended"], to: "revoked", noop: "revoked" },
      reinstate: { from: ["suspended", "revoked"], to: "issued", noop: null }
    }
    const move = moves[action]
    if (this.state === move.noop) return ok()
    if (!move.from.includes(this.state)) return fail("InvalidTransition", "invalid_transition")
    this.state = move.to
    return ok()
  }

  /** Terminate with confirm: irreversible, every machine in `active` status deactivated; a repeat is a no-op. */
  terminate(): Outcome {
    if (this.state === "terminated") return ok()
    this.state = "terminated"
    for (const machine of this.machines.values()) if (machine.status === "active") machine.status = "inactive"
    return ok()
  }

  /** Renew by days: from the later of now and the expiry (from now when perpetual). */
  renewDays(days: number): Outcome {
    if (this.state === "terminated") return fail("LicenseTerminated", "license_terminated")
    this.expiresAt = Math.max(this.now, this.expiresAt ?? this.now) + days * DAY
    return ok()
  }

  /** Validation's code for a fingerprint (§4, first failure wins). */
  validate(fingerprint: string | null): { code: string; needsActivation: boolean } {
    const refusal = this.refusal()
    if (refusal !== null) return { code: refusal, needsActivation: false }
    const held = this.seatsHeld
    const ceiling = this.ceiling
    if (ceiling !== null && held > ceiling) return { code: "machine_limit_exceeded", needsActivation: false }
    if (fingerprint === null) return { code: "valid", needsActivation: false }
    const machine = this.machines.get(fingerprint)
    if (machine?.status === "revoked") return { code: "machine_revoked", needsActivation: false }
    if (machine === undefined || !this.holds(machine)) {
      return { code: "fingerprint_not_activated", needsActivation: ceiling === null || held < ceiling }
    }
    return { code: "valid", needsActivation: false }
  }
}
