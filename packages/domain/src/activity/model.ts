/** The event log's records: one entry per client call (validate, activate, ...) and refusal. */
import { Schema } from "effect"

/** What a client call was, for the event log (analytics). */
export const activityKinds = ["validate", "activate", "deactivate", "heartbeat", "download"] as const
export const ActivityKind = Schema.Literals(activityKinds)
export type ActivityKind = typeof ActivityKind.Type

/** One line of the event log: every validate, activate, deactivate, heartbeat and refusal. */
export interface ActivityEntry {
  readonly kind: ActivityKind
  readonly licenseId: number | null
  readonly licenseKey: string
  readonly machineId: number | null
  readonly fingerprint: string | null
  readonly ipAddress: string | null
  readonly appVersion: string | null
  /** `valid`, `activated`, a refusal code, ... */
  readonly result: string
  readonly at: number
  /** The product of the license found, when one was (the analytics filter on it); absent counts as none. */
  readonly productId?: number | null | undefined
}
