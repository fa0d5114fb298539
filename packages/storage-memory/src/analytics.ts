/**
 * The domain's `AnalyticsRepository` in memory: sums of the event log's hourly counters (`activity.ts`), seats
 * and app versions of the machines, and the anomalies announced so far.
 */
import { Analytics, Machine, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { EventLog } from "./activity.js"
import { frozen, type Tables } from "./Tables.js"

export const make = (t: Tables, eventLog: EventLog): Ports.AnalyticsRepository["Service"] => {
  const { anomalies, db, licenses, machines, read, replace } = t
  /** The start of each period's `topLicenses` window as last set (every hour counts while unset). */
  const topWindows = new Map<Model.AnalyticsPeriod, number>()

  return Ports.AnalyticsRepository.of({
    hourly: (q) =>
      Effect.sync(() => {
        const sums = new Map<number, { hour: number; valid: number; invalid: number; refused: number; activations: number }>()
        const ids = q.scopeId === undefined ? [...eventLog.rollups[q.scope].values()] : [eventLog.rollups[q.scope].get(q.scopeId) ?? new Map()]
        for (const ofId of ids) {
          for (const [hour, c] of ofId) {
            if (hour < q.from || hour >= q.to) continue
            const sum = sums.get(hour) ?? { hour, valid: 0, invalid: 0, refused: 0, activations: 0 }
            sums.set(hour, { hour, valid: sum.valid + c.valid, invalid: sum.invalid + c.invalid, refused: sum.refused + c.refused, activations: sum.activations + c.activations })
          }
        }
        return [...sums.values()].sort((a, b) => a.hour - b.hour)
      }),
    // Summed from the hourly counters on each call: the window's start is all this store keeps of it.
    topLicenses: (period, limit) =>
      Effect.sync(() => {
        const from = topWindows.get(period) ?? -Infinity
        const totals: Array<{ licenseId: number; validations: number }> = []
        for (const [licenseId, ofId] of eventLog.rollups.license) {
          if (licenseId === Analytics.noLicense) continue
          let validations = 0
          for (const [hour, c] of ofId) if (hour >= from) validations += c.valid + c.invalid
          if (validations > 0) totals.push({ licenseId, validations })
        }
        return totals.sort((a, b) => b.validations - a.validations || a.licenseId - b.licenseId).slice(0, Math.max(0, limit))
      }),
    moveTopWindows: (windows) =>
      Effect.sync(() => {
        for (const w of windows) topWindows.set(w.period, w.from)
      }),
    busyHours: (q) =>
      Effect.sync(() => {
        const out: Array<{ licenseId: number; hour: number; count: number }> = []
        for (const [licenseId, ofId] of eventLog.rollups.license) {
          if (licenseId === Analytics.noLicense) continue
          for (const [hour, c] of ofId) {
            const count = q.counter === "refused" ? c.refused : c.valid + c.invalid
            if (hour >= q.from && count >= q.atLeast) out.push({ licenseId, hour, count })
          }
        }
        return out.sort((a, b) => a.licenseId - b.licenseId || a.hour - b.hour)
      }),
    distinctPerLicense: (q) =>
      Effect.sync(() => {
        const seen = new Map<number, Set<string>>()
        for (const e of eventLog.heldEntries()) {
          if (e.licenseId === null || e.at < q.since) continue
          if (q.kind !== undefined && e.kind !== q.kind) continue
          if (q.result !== undefined && e.result !== q.result) continue
          const value = q.column === "fingerprint" ? e.fingerprint : e.ipAddress
          if (value === null) continue
          let values = seen.get(e.licenseId)
          if (values === undefined) seen.set(e.licenseId, values = new Set())
          values.add(value)
        }
        return [...seen].filter(([, v]) => v.size >= q.atLeast).map(([licenseId, v]) => ({ licenseId, count: v.size })).sort((a, b) => a.licenseId - b.licenseId)
      }),
    seats: (states, at) =>
      read((tx) => {
        let activeMachines = 0
        let totalSeats = 0
        for (const license of licenses.all(db.overlayOf(tx, licenses))) {
          if (license.maxActivations === null || !states.includes(license.state)) continue
          totalSeats += license.maxActivations
          for (const machine of machines.inGroup(db.overlayOf(tx, machines), "license", license.id)) if (Machine.holdsSeatByDeadline(machine, at)) activeMachines++
        }
        return { activeMachines, totalSeats }
      }),
    appVersions: (at) =>
      read((tx) => {
        const counts = new Map<string | null, number>()
        for (const machine of machines.all(db.overlayOf(tx, machines))) {
          if (Machine.holdsSeatByDeadline(machine, at)) counts.set(machine.appVersion, (counts.get(machine.appVersion) ?? 0) + 1)
        }
        return [...counts].map(([appVersion, n]) => ({ appVersion, machines: n }))
          .sort((a, b) => b.machines - a.machines || String(a.appVersion).localeCompare(String(b.appVersion)))
      }),
    recordAnomalies: (found, since) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const fresh: Array<Ports.AnomalyRecord> = []
          for (const a of found) {
            const held = anomalies.findUnique(db.overlayOf(tx, anomalies), "kind", `${a.licenseId}\u0000${a.type}`)
            if (held === undefined) {
              if (yield* db.putUnique(tx, anomalies, [frozen({ ...a, id: anomalies.nextId() })])) fresh.push(a)
            } else if (held.detectedAt < since) {
              yield* replace(tx, anomalies, { ...held, detectedAt: a.detectedAt })
              fresh.push(a)
            }
          }
          return fresh
        })
      ),
    anomaliesSince: (since) =>
      read((tx) =>
        [...anomalies.all(db.overlayOf(tx, anomalies))]
          .filter((a) => a.detectedAt >= since)
          .map(({ detectedAt, licenseId, type }) => ({ licenseId, type, detectedAt }))
      )
  })
}
