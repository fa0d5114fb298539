/** What the event log needs from a store. */
import { Context } from "effect"
import type { Op } from "../shared/ports.js"
import type { ActivityEntry } from "./model.js"

/**
 * The event log (analytics): every client call and refusal, written in batches. A store holds an entry until
 * `prune` removes it, except that a store in memory holds only a window of the newest entries (the memory
 * store's `activityWindow`, at least 1,000): `count` counts what the store holds now.
 */
export class ActivityLog extends Context.Service<ActivityLog, {
  readonly record: (entries: ReadonlyArray<ActivityEntry>) => Op<void>
  readonly count: (filter: { readonly licenseId?: number | undefined }) => Op<number>
  /**
   * Deletes at most `limit` entries whose time is before `olderThan` (epoch ms), oldest first, skipping rows
   * other transactions hold; returns how many it deleted (fewer than `limit`: none older are left). Retention
   * calls it outside transactions, in small batches, so each statement stays short.
   */
  readonly prune: (olderThan: number, limit: number) => Op<number>
}>()("@lm/domain/ActivityLog") {}
