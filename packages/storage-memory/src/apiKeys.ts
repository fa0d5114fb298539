/** The domain's `ApiKeyRepository` in memory. */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { byId, frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.ApiKeyRepository["Service"] => {
  const { apiKeys, db, deletedApiKeys, eraseRow, insertRows, lockRow, read, replace } = t

  return Ports.ApiKeyRepository.of({
    insert: (draft: Model.ApiKeyDraft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.ApiKey>({ ...draft, id: apiKeys.nextId() })
          return Effect.map(insertRows(tx, apiKeys, [row]), () => row)
        })
      ),
    findByConsumerKeyHash: (hash) => read((tx) => apiKeys.findUnique(db.overlayOf(tx, apiKeys), "hash", hash)),
    list: (page) => read((tx) => pageOf([...apiKeys.all(db.overlayOf(tx, apiKeys))].sort(byId), page)),
    delete: (id) => db.inTransaction((tx) => eraseRow(tx, apiKeys, id)),
    deleteRemembered: (id, at) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, apiKeys, id), (current) => {
          if (current === undefined) return Effect.succeed(false)
          db.erase(tx, apiKeys, id)
          const known = deletedApiKeys.findUnique(db.overlayOf(tx, deletedApiKeys), "hash", current.consumerKeyHash)
          if (known !== undefined) return Effect.succeed(true)
          const row = frozen({ id: deletedApiKeys.nextId(), consumerKeyHash: current.consumerKeyHash, deletedAt: at })
          return Effect.as(insertRows(tx, deletedApiKeys, [row]), true)
        })
      ),
    wasDeleted: (hash) =>
      read((tx) => deletedApiKeys.findUnique(db.overlayOf(tx, deletedApiKeys), "hash", hash) !== undefined),
    count: read((tx) => apiKeys.count(db.overlayOf(tx, apiKeys))),
    touch: (id, at) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, apiKeys, id), (current) =>
          current === undefined ? Effect.void : Effect.asVoid(replace(tx, apiKeys, { ...current, lastAccessAt: at })))
      )
  })
}
