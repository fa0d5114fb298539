/**
 * The domain's `ActivityLog` (the event log) in memory, with the hourly counters its entries add. It holds only
 * the newest `activityWindow` entries: older ones are dropped as new ones commit, so a long-running process keeps
 * a bounded log (`count` counts what is held). The counters stay (retention never prunes them).
 */
import { Analytics, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tx } from "./Database.js"
import type { Tables } from "./Tables.js"

/** The entries a transaction recorded and the hourly counters they add, published when it commits. */
interface Pending {
  readonly activity: Array<Model.ActivityEntry>
  readonly rollup: Array<Analytics.HourlyCount>
}

/** One hour's counters of one scope id. */
export interface HourCounters {
  valid: number
  invalid: number
  refused: number
  activations: number
}

export const make = (t: Tables, activityWindow: number) => {
  const { db, read } = t
  /** The event log: the entries from `activityHead` on (the ones before it are gone, and sliced off now and then). */
  let activity: Array<Model.ActivityEntry> = []
  let activityHead = 0
  const activityByLicense = new Map<number, number>()
  /** The hourly counters (rollups) per scope, then scope id, then hour start; retention leaves them. */
  const rollups: Record<Analytics.RollupScope, Map<number, Map<number, HourCounters>>> = {
    license: new Map(),
    product: new Map()
  }
  const addRollup = (row: Analytics.HourlyCount) => {
    let ofId = rollups[row.scope].get(row.scopeId)
    if (ofId === undefined) rollups[row.scope].set(row.scopeId, ofId = new Map())
    const held = ofId.get(row.hour)
    if (held === undefined) {
      ofId.set(row.hour, { valid: row.valid, invalid: row.invalid, refused: row.refused, activations: row.activations })
    } else {
      held.valid += row.valid
      held.invalid += row.invalid
      held.refused += row.refused
      held.activations += row.activations
    }
  }
  const pendingOf = new WeakMap<Tx, Pending>()

  /** Takes an entry that leaves the event log off the per-license counts. */
  const forgetActivity = (entry: Model.ActivityEntry) => {
    if (entry.licenseId === null) return
    const left = (activityByLicense.get(entry.licenseId) ?? 0) - 1
    if (left > 0) activityByLicense.set(entry.licenseId, left)
    else activityByLicense.delete(entry.licenseId)
  }

  const pending = (tx: Tx): Pending => {
    let p = pendingOf.get(tx)
    if (p === undefined) {
      const created: Pending = { activity: [], rollup: [] }
      pendingOf.set(tx, created)
      tx.onCommit.push(() => {
        for (const entry of created.activity) {
          activity.push(entry)
          if (entry.licenseId !== null) activityByLicense.set(entry.licenseId, (activityByLicense.get(entry.licenseId) ?? 0) + 1)
        }
        for (const row of created.rollup) addRollup(row)
        while (activity.length - activityHead > activityWindow) forgetActivity(activity[activityHead++]!)
        if (activityHead > 1_024 && activityHead * 2 > activity.length) {
          activity = activity.slice(activityHead)
          activityHead = 0
        }
      })
      p = created
    }
    return p
  }

  /** The entries the log holds, oldest first. */
  const heldEntries = function*(): Iterable<Model.ActivityEntry> {
    for (let i = activityHead; i < activity.length; i++) yield activity[i]!
  }

  const activityLog = Ports.ActivityLog.of({
    record: (entries) =>
      db.inTransaction((tx) =>
        Effect.sync(() => {
          if (entries.length === 0) return
          const p = pending(tx)
          const length = p.activity.length
          const rollupLength = p.rollup.length
          // An entry holds primitives only: a frozen shallow copy is a full one, without structuredClone's cost per entry.
          for (const entry of entries) p.activity.push(Object.freeze({ ...entry }))
          p.rollup.push(...Analytics.hourlyCountsOf(entries))
          db.record(tx, () => {
            p.activity.length = length
            p.rollup.length = rollupLength
          })
        })
      ),
    count: (filter) =>
      read((tx) => {
        const own = tx === undefined ? [] : pendingOf.get(tx)?.activity ?? []
        if (filter.licenseId === undefined) return activity.length - activityHead + own.length
        const licenseId = filter.licenseId
        return (activityByLicense.get(licenseId) ?? 0) + own.filter((entry) => entry.licenseId === licenseId).length
      }),
    // Deletes committed entries at once: retention runs outside transactions (no other transaction holds them).
    prune: (olderThan, limit) =>
      Effect.sync(() => {
        const held = activity.slice(activityHead)
        let old = held.filter((entry) => entry.at < olderThan)
        if (old.length === 0 || limit < 1) return 0
        if (old.length > limit) old = old.sort((a, b) => a.at - b.at).slice(0, limit)
        const gone = new Set(old)
        for (const entry of old) forgetActivity(entry)
        activity = held.filter((entry) => !gone.has(entry))
        activityHead = 0
        return old.length
      })
  })

  return { activityLog, heldEntries, rollups }
}

/** The event log's entries and hourly counters, which the analytics read. */
export type EventLog = ReturnType<typeof make>
