/**
 * The domain's `BillingEventRepository` in memory: received provider events. The first receipt of a provider's
 * event id claims it through a unique key (which waits for a transaction holding the same claim to end); later
 * receipts, recorded as `duplicate`, take no claim.
 */
import { type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.BillingEventRepository["Service"] => {
  const { billingEvents, db, read } = t

  return Ports.BillingEventRepository.of({
    record: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.BillingEvent>({ ...draft, id: billingEvents.nextId() })
          return Effect.map(db.putUnique(tx, billingEvents, [row]), (written) => (written ? row : undefined))
        })
      ),
    lastAppliedAt: (subscriptionId) =>
      read((tx) => {
        let last: number | null = null
        for (const e of billingEvents.inGroup(db.overlayOf(tx, billingEvents), "subscription", subscriptionId)) {
          if (e.outcome === "applied" && (last === null || e.occurredAt > last)) last = e.occurredAt
        }
        return last
      }),
    list: (query) =>
      read((tx) =>
        pageOf(
          [...billingEvents.all(db.overlayOf(tx, billingEvents))]
            .filter((e) => (query.outcome === undefined || e.outcome === query.outcome) && (query.provider === undefined || e.provider === query.provider))
            .sort((a, b) => b.id - a.id),
          query
        )
      )
  })
}
