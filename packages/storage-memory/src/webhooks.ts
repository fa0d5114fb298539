/**
 * The domain's `WebhookRepository` in memory. A webhook's delete takes its deliveries with it (and with them the
 * outbox's hold on the events they named).
 */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Outbox } from "./outbox.js"
import { byId, frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables, outbox: Outbox): Ports.WebhookRepository["Service"] => {
  const { db, deliveries, eraseRow, insertRows, lockRow, read, replace, webhooks } = t

  return Ports.WebhookRepository.of({
    insert: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Webhook>({ ...draft, id: webhooks.nextId() })
          return Effect.map(insertRows(tx, webhooks, [row]), () => row)
        })
      ),
    findById: (id) => read((tx) => webhooks.get(db.overlayOf(tx, webhooks), id)),
    list: (page) => read((tx) => pageOf([...webhooks.all(db.overlayOf(tx, webhooks))].sort(byId), page)),
    listActive: read((tx) => [...webhooks.inGroup(db.overlayOf(tx, webhooks), "active", 0)]),
    lockById: (id) => db.inTransaction((tx) => lockRow(tx, webhooks, id)),
    update: (webhook) => db.inTransaction((tx) => replace(tx, webhooks, webhook)),
    delete: (id) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          if (!(yield* eraseRow(tx, webhooks, id))) return false
          const erasedEvents: Array<number> = []
          for (const delivery of [...deliveries.inGroup(db.overlayOf(tx, deliveries), "webhook", id)]) {
            yield* eraseRow(tx, deliveries, delivery.id)
            erasedEvents.push(delivery.eventId)
          }
          tx.onCommit.push(() => {
            for (const eventId of erasedEvents) outbox.releaseEvent(eventId)
          })
          return true
        })
      )
  })
}
