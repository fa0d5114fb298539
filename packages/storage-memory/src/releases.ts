/** The domain's `ReleaseRepository` in memory. */
import { Errors, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.ReleaseRepository["Service"] => {
  const { db, eraseRow, read, releases } = t

  /** Newest first: `versionKey` descending (byte order: its characters are ASCII), then id descending. */
  const newestFirst = (a: Model.Release, b: Model.Release) =>
    a.versionKey === b.versionKey ? b.id - a.id : a.versionKey < b.versionKey ? 1 : -1

  return Ports.ReleaseRepository.of({
    insert: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Release>({ ...draft, id: releases.nextId() })
          return Effect.flatMap(db.putUnique(tx, releases, [row]), (written) => (written ? Effect.succeed(row) : Effect.fail(Errors.releaseExists())))
        })
      ),
    findById: (id) => read((tx) => releases.get(db.overlayOf(tx, releases), id)),
    delete: (id) => db.inTransaction((tx) => eraseRow(tx, releases, id)),
    findByVersion: (productId, version) => read((tx) => releases.findUnique(db.overlayOf(tx, releases), "version", `${productId}\u0000${version}`)),
    list: (q) =>
      read((tx) => {
        const overlay = db.overlayOf(tx, releases)
        const rows = q.productId === undefined ? [...releases.all(overlay)] : [...releases.inGroup(overlay, "product", q.productId)]
        const channels = q.channels === undefined ? undefined : new Set(q.channels)
        return pageOf(rows.filter((r) => channels === undefined || channels.has(r.channel)).sort(newestFirst), q)
      })
  })
}
