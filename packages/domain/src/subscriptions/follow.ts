/** How the bound license follows its subscription (CONTRACT §10). */
import type { License } from "../licensing/model.js"
import type { DomainEvent } from "../shared/model.js"
import type { Subscription } from "./model.js"
import { isFinal } from "./transitions.js"

/** The bound license as the subscription makes it (its `suspendedBy` says who holds its suspension now). */
export interface LicenseFollow {
  readonly license: License
  /** False when the license was already so and nothing needs writing. */
  readonly changed: boolean
  /** The license's events: suspended, reinstated, expired (ended), or renewed (a new period end). */
  readonly events: ReadonlyArray<DomainEvent>
}

const licenseEvent = (type: DomainEvent["type"], license: License, now: number, data: Record<string, unknown>): DomainEvent => ({
  type,
  occurredAt: now,
  licenseId: license.id,
  machineId: null,
  data: { license_key: license.key, ...data }
})

/**
 * How the bound license follows its subscription (CONTRACT §10): its `expires_at` is the current period end;
 * on-hold suspends it (as the subscription's suspension: `suspendedBy` "subscription"); active, trial or
 * pending-cancel again reinstate it only when the subscription holds its suspension, never an administrator's
 * (`applyLicenseAction`'s suspend takes a suspension over); cancelled and expired end it at `now` with no grace
 * (lifting the subscription's own suspension, so that it reports expired). A revoked or terminated license keeps
 * its state.
 */
export const followLicense = (license: License, subscription: Subscription, now: number): LicenseFollow => {
  let state = license.state
  let by = license.suspendedBy
  let expiresAt: number | null = subscription.currentPeriodEnd
  let graceDays = license.graceDays
  const ownSuspension = state === "suspended" && by === "subscription"
  if (subscription.status === "on-hold") {
    if (state === "issued") {
      state = "suspended"
      by = "subscription"
    }
  } else {
    if (isFinal(subscription.status)) {
      expiresAt = Math.min(now, license.expiresAt ?? now)
      graceDays = 0
    }
    // its own suspension gives way to a live subscription, or to the end (so the license reports expired)
    if (ownSuspension) {
      state = "issued"
      by = null
    }
  }
  const changed = state !== license.state || expiresAt !== license.expiresAt || graceDays !== license.graceDays || by !== license.suspendedBy
  if (!changed) return { license, changed: false, events: [] }
  const next: License = { ...license, state, suspendedBy: by, expiresAt, graceDays, updatedAt: now, revision: license.revision + 1 }
  const cause = { subscription_id: subscription.id, from: license.state }
  const events: Array<DomainEvent> = []
  if (state === "suspended" && license.state !== "suspended") events.push(licenseEvent("license.suspended", next, now, cause))
  else if (state === "issued" && license.state === "suspended") events.push(licenseEvent("license.reinstated", next, now, cause))
  if (isFinal(subscription.status)) {
    if (expiresAt !== license.expiresAt || graceDays !== license.graceDays) events.push(licenseEvent("license.expired", next, now, cause))
  } else if (expiresAt !== license.expiresAt) {
    events.push(licenseEvent("license.renewed", next, now, { subscription_id: subscription.id, previous_expires_at: license.expiresAt, expires_at: expiresAt }))
  }
  return { license: next, changed: true, events }
}
