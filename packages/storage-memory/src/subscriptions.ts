/** The domain's `SubscriptionRepository` in memory: subscriptions (with the time of their next move) and renewal records. */
import { Errors, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { byId, frozen, notInTransaction, pageOf, type SubscriptionRow, type Tables } from "./Tables.js"

const subscriptionOf = (row: SubscriptionRow | undefined): Model.Subscription | undefined => {
  if (row === undefined) return undefined
  const { dueAt: _, ...subscription } = row
  return subscription
}

export const make = (t: Tables): Ports.SubscriptionRepository["Service"] => {
  const { db, insertRows, lockName, lockRow, read, renewals, subscriptions } = t

  return Ports.SubscriptionRepository.of({
    insert: (draft, dueAt) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<SubscriptionRow>({ ...draft, id: subscriptions.nextId(), revision: 1, dueAt })
          return Effect.flatMap(db.putUnique(tx, subscriptions, [row]), (written) =>
            written ? Effect.succeed(subscriptionOf(row)!) : Effect.fail(Errors.subscriptionExists()))
        })
      ),
    findById: (id) => read((tx) => subscriptionOf(subscriptions.get(db.overlayOf(tx, subscriptions), id))),
    findByExternalId: (provider, externalId) =>
      read((tx) => subscriptionOf(subscriptions.findUnique(db.overlayOf(tx, subscriptions), "external", `${provider}\u0000${externalId}`))),
    lockById: (id) =>
      db.inTransaction((tx) => Effect.map(lockRow(tx, subscriptions, id), subscriptionOf)),
    list: (query) =>
      read((tx) =>
        pageOf(
          [...subscriptions.all(db.overlayOf(tx, subscriptions))]
            .filter((s) =>
              (query.status === undefined || s.status === query.status) &&
              (query.userId === undefined || s.userId === query.userId) &&
              (query.productId === undefined || s.productId === query.productId)
            )
            .sort(byId)
            .map((row) => subscriptionOf(row)!),
          query
        )
      ),
    update: (subscription, dueAt) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, subscriptions, subscription.id), (current) => {
          if (current === undefined) return Effect.die(new Error(`no subscription with id ${subscription.id} to update`))
          const next = frozen<SubscriptionRow>({ ...subscription, dueAt })
          return Effect.flatMap(db.putUnique(tx, subscriptions, [next]), (written) =>
            written ? Effect.succeed(subscriptionOf(next)!) : Effect.fail(Errors.subscriptionExists()))
        })),
    totals: read((tx) => {
      const groups = new Map<string, { -readonly [K in keyof Ports.SubscriptionTotal]: Ports.SubscriptionTotal[K] }>()
      for (const s of subscriptions.all(db.overlayOf(tx, subscriptions))) {
        const key = `${s.status}\u0000${s.currency}\u0000${s.billingPeriod}\u0000${s.billingInterval}`
        const group = groups.get(key) ?? { status: s.status, currency: s.currency, billingPeriod: s.billingPeriod, billingInterval: s.billingInterval, count: 0, amount: 0n }
        group.count += 1
        group.amount += BigInt(s.amount)
        groups.set(key, group)
      }
      return [...groups.values()]
    }),
    claimDue: (now, limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimDue")
        const due = [...subscriptions.inGroup(db.overlayOf(tx, subscriptions), "due", 0)]
          .filter((s) => s.dueAt !== null && s.dueAt <= now && !db.lockedByOther(tx, lockName(subscriptions, s.id)))
          .sort((a, b) => a.dueAt! - b.dueAt! || a.id - b.id)
          .slice(0, Math.max(0, limit))
        return Effect.forEach(due, (s) => lockRow(tx, subscriptions, s.id)).pipe(
          Effect.map((rows) => rows.flatMap((row) => (row === undefined ? [] : [subscriptionOf(row)!])))
        )
      }),
    insertRenewal: (subscriptionId, draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.RenewalRecord>({ ...draft, id: renewals.nextId(), subscriptionId })
          return Effect.map(insertRows(tx, renewals, [row]), () => row)
        })
      ),
    listRenewals: (subscriptionId, page) =>
      read((tx) => pageOf([...renewals.inGroup(db.overlayOf(tx, renewals), "subscription", subscriptionId)].sort(byId), page))
  })
}
