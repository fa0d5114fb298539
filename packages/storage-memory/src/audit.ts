/** The domain's `AuditLogRepository` in memory: a table of entries, written in the caller's transaction. */
import { Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.AuditLogRepository["Service"] => {
  const { auditEntries, db, eraseRow, insertRows, read } = t
  return Ports.AuditLogRepository.of({
    append: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.AuditEntry>({ ...draft, id: auditEntries.nextId() })
          return Effect.map(insertRows(tx, auditEntries, [row]), () => row)
        })
      ),
    list: (filter, page) =>
      read((tx) => {
        const matches = [...auditEntries.all(db.overlayOf(tx, auditEntries))].filter(Model.auditMatches(filter))
        return pageOf(matches.sort((a, b) => b.id - a.id), page)
      }),
    prune: (olderThan, limit) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const old = [...auditEntries.all(db.overlayOf(tx, auditEntries))]
            .filter((entry) => entry.at < olderThan)
            .sort((a, b) => a.at - b.at || a.id - b.id)
            .slice(0, Math.max(0, limit))
          return Effect.as(Effect.forEach(old, (entry) => eraseRow(tx, auditEntries, entry.id), { discard: true }), old.length)
        })
      )
  })
}
