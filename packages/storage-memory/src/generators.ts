/** The domain's `GeneratorRepository` in memory. */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { byId, frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.GeneratorRepository["Service"] => {
  const { db, eraseRow, generators, insertRows, read, replace } = t

  return Ports.GeneratorRepository.of({
    insert: (draft: Model.GeneratorDraft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Generator>({ ...draft, id: generators.nextId() })
          return Effect.map(insertRows(tx, generators, [row]), () => row)
        })
      ),
    findById: (id) => read((tx) => generators.get(db.overlayOf(tx, generators), id)),
    list: (page) => read((tx) => pageOf([...generators.all(db.overlayOf(tx, generators))].sort(byId), page)),
    update: (generator) => db.inTransaction((tx) => replace(tx, generators, generator)),
    delete: (id) => db.inTransaction((tx) => Effect.asVoid(eraseRow(tx, generators, id)))
  })
}
