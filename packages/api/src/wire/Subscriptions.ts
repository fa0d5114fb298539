/** The wire shapes of subscriptions (CONTRACT §10), their renewal records and billing provider events (§20). */
import { Schema } from "effect"
import { Model, Money } from "@lm/domain/core"
import { wireRecord } from "./Record.js"

// ---- subscriptions (CONTRACT §10) ----------------------------------------------------------------------------

/** An amount in minor units written in its currency, as a decimal string. */
const Amount = Schema.String

/** A subscription's item on the wire: its amount in the subscription's currency. */
export const ItemWire = wireRecord(Model.SubscriptionItem, { supplied: { amount: Amount } })

/**
 * A subscription on the wire; money as decimal strings in its currency, without the billing calendar's anchor
 * or its revision.
 */
export const SubscriptionWire = wireRecord(Model.Subscription, {
  omit: ["billingAnchor", "revision"],
  supplied: { amount: Amount, items: Schema.Array(ItemWire) }
})
export type SubscriptionWire = typeof SubscriptionWire.Type

export const subscriptionToWire = (s: Model.Subscription): SubscriptionWire =>
  SubscriptionWire.from(s, {
    amount: Money.formatAmount(s.amount, s.currency),
    items: s.items.map((item) => ItemWire.from(item, { amount: Money.formatAmount(item.amount, s.currency) }))
  })

/** A received billing provider event on the wire (CONTRACT §20): the provider's event id is its `id`. */
export const BillingEventWire = wireRecord(Model.BillingEvent, {
  omit: ["id", "occurredAt"],
  rename: { eventId: "id" },
  describe: { id: "The provider's event id (Lemon Squeezy: the SHA-256 of the body)." }
})
export type BillingEventWire = typeof BillingEventWire.Type

export const billingEventToWire = (e: Model.BillingEvent): BillingEventWire => BillingEventWire.from(e)

/** A plan a switch moves between, on the wire. */
const PlanWire = wireRecord(Model.Plan, { supplied: { amount: Amount } })

/** The proration of a switch on the wire: each amount in the currency. */
const ProrationWire = wireRecord(Model.Proration, { supplied: { credit: Amount, charge: Amount, net: Amount } })

/** A renewal record on the wire: money in its currency, without its subscription (the path names it). */
export const RenewalWire = wireRecord(Model.RenewalRecord, {
  omit: ["subscriptionId"],
  supplied: { amount: Amount, proration: Schema.NullOr(ProrationWire), from: Schema.NullOr(PlanWire), to: Schema.NullOr(PlanWire) }
})
export type RenewalWire = typeof RenewalWire.Type

export const renewalToWire = (r: Model.RenewalRecord): RenewalWire => {
  const money = (minor: number) => Money.formatAmount(minor, r.currency)
  const plan = (p: Model.Plan | null) => (p === null ? null : PlanWire.from(p, { amount: money(p.amount) }))
  return RenewalWire.from(r, {
    amount: money(r.amount),
    proration: r.proration === null
      ? null
      : ProrationWire.from(r.proration, { credit: money(r.proration.credit), charge: money(r.proration.charge), net: money(r.proration.net) }),
    from: plan(r.from),
    to: plan(r.to)
  })
}
