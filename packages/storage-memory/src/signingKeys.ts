/** The domain's `SigningKeyRepository` in memory. */
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import { frozen, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.SigningKeyRepository["Service"] => {
  const { db, eraseRow, insertRows, read, replace, signingKeys } = t

  return Ports.SigningKeyRepository.of({
    list: read((tx) =>
      [...signingKeys.all(db.overlayOf(tx, signingKeys))]
        .sort((a, b) => a.createdAt - b.createdAt || a.id - b.id)
        .map(({ id: _, ...key }) => key)
    ),
    insert: (key) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          if (key.current) {
            const currents = [...signingKeys.all(db.overlayOf(tx, signingKeys))].filter((k) => k.current)
            for (const previous of currents) yield* replace(tx, signingKeys, previous, (latest) => ({ ...latest, current: false }))
          }
          const { kid, seed, publicKey, current, createdAt } = key
          yield* insertRows(tx, signingKeys, [frozen({ id: signingKeys.nextId(), kid, seed, publicKey, current, createdAt })])
        })
      ),
    replaceSeed: (kid, seed) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = [...signingKeys.all(db.overlayOf(tx, signingKeys))].find((k) => k.kid === kid)
          return row === undefined ? Effect.void : Effect.asVoid(replace(tx, signingKeys, row, (latest) => ({ ...latest, seed })))
        })
      ),
    retire: (kid) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = [...signingKeys.all(db.overlayOf(tx, signingKeys))].find((k) => k.kid === kid && !k.current)
          return row === undefined ? Effect.succeed(false) : eraseRow(tx, signingKeys, row.id)
        })
      )
  })
}
