/**
 * The domain's `WebhookDeliveryQueue` in memory: outbox events dispatched once each, and deliveries claimed for a
 * lease. The delivery log holds the newest `deliveryWindow` finished deliveries; pending ones are never dropped.
 */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tx } from "./Database.js"
import type { Outbox } from "./outbox.js"
import { frozen, notInTransaction, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables, outbox: Outbox, deliveryWindow: number): Ports.WebhookDeliveryQueue["Service"] => {
  const { db, deliveries, insertRows, lockName, lockRow, read, replace, webhooks } = t

  /**
   * Ids of deliveries in the order they finished, oldest first from `finishedHead`: past `deliveryWindow` the
   * oldest are erased (the delivery log keeps the newest; a pending one, redelivered meanwhile, is kept, as is a
   * row another transaction holds).
   */
  let finishedDeliveries: Array<number> = []
  let finishedHead = 0
  const forgetFinishedDeliveries = (tx: Tx) => {
    let head = finishedHead
    const erasedEvents: Array<number> = []
    while (finishedDeliveries.length - head > deliveryWindow) {
      const id = finishedDeliveries[head++]!
      const row = deliveries.get(db.overlayOf(tx, deliveries), id)
      if (row !== undefined && row.status !== "pending" && db.tryLock(tx, lockName(deliveries, id))) {
        db.erase(tx, deliveries, id)
        erasedEvents.push(row.eventId)
      }
    }
    // Moved on when the erasures commit: after a rollback the same ones are tried again.
    tx.onCommit.push(() => {
      for (const id of erasedEvents) outbox.releaseEvent(id)
      finishedHead = Math.max(finishedHead, head)
      if (finishedHead > 1_024 && finishedHead * 2 > finishedDeliveries.length) {
        finishedDeliveries = finishedDeliveries.slice(finishedHead)
        finishedHead = 0
      }
    })
  }

  return Ports.WebhookDeliveryQueue.of({
    claimUndispatched: (limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimUndispatched")
        const claimed: Array<Model.StoredEvent> = []
        for (const id of outbox.undispatched) {
          if (claimed.length >= limit) break
          if (db.tryLock(tx, `event:${id}`)) claimed.push(outbox.eventOf(id)!)
        }
        return Effect.succeed(claimed)
      }),
    dispatch: (eventIds, drafts) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const rows = drafts.map((draft) => frozen<Model.WebhookDelivery>({ ...draft, id: deliveries.nextId() }))
          yield* insertRows(tx, deliveries, rows)
          tx.onCommit.push(() => outbox.dispatched(eventIds))
        })
      ),
    claimDue: (now, lockedUntil, limit) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          // The first `limit` due ones in id order (lazily: the pending group may be long), answered in due order.
          const due: Array<Model.WebhookDelivery> = []
          for (const d of deliveries.inGroup(db.overlayOf(tx, deliveries), "pending", 0)) {
            if (due.length >= limit) break
            if (
              d.nextAttemptAt !== null && d.nextAttemptAt <= now && (d.lockedUntil === null || d.lockedUntil <= now) &&
              webhooks.get(db.overlayOf(tx, webhooks), d.webhookId)?.status === "active" &&
              !db.lockedByOther(tx, lockName(deliveries, d.id))
            ) due.push(d)
          }
          due.sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || a.id - b.id)
          const claimed: Array<Model.WebhookDelivery> = []
          for (const d of due) claimed.push(yield* replace(tx, deliveries, d, (latest) => ({ ...latest, lockedUntil })))
          return claimed
        })
      ),
    // A delivery deleted with its webhook while an attempt was in flight stays deleted (as an UPDATE of no row).
    update: (delivery) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, deliveries, delivery.id), (current) =>
          current === undefined ? Effect.succeed(delivery) : replace(tx, deliveries, delivery))
      ),
    recordAttempts: (attempted) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          for (const delivery of attempted) {
            const current = yield* lockRow(tx, deliveries, delivery.id)
            if (current !== undefined) yield* replace(tx, deliveries, delivery)
          }
          // Listed at once (after a rollback an entry's row is still pending, and is passed over when trimmed).
          for (const d of attempted) if (d.status !== "pending") finishedDeliveries.push(d.id)
          forgetFinishedDeliveries(tx)
        })
      ),
    findById: (webhookId, id) =>
      read((tx) => {
        const found = deliveries.get(db.overlayOf(tx, deliveries), id)
        return found?.webhookId === webhookId ? found : undefined
      }),
    countPending: read((tx) => {
      let count = 0
      for (const _ of deliveries.inGroup(db.overlayOf(tx, deliveries), "pending", 0)) count++
      return count
    }),
    list: (webhookId, page) =>
      read((tx) => pageOf([...deliveries.inGroup(db.overlayOf(tx, deliveries), "webhook", webhookId)].sort((a, b) => b.id - a.id), page))
  })
}
