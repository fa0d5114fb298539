/**
 * Each billing provider's webhook events as the domain's normalised `ProviderEvent` (CONTRACT §20): one mapping
 * table per provider, from the provider's event type to the subscription move it asks for, and where each
 * provider keeps the event id, its timestamp, the provider's subscription id and `lm_subscription_id`. An event
 * type absent from its table moves nothing (the domain records it as `ignored`). Whether a move is allowed is the
 * domain's state machine's decision, not this module's.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { Errors, type Model } from "@lm/domain"
import type { VerifiedBody } from "./Signatures.js"

type Json = Record<string, unknown>

const obj = (value: unknown): Json => (typeof value === "object" && value !== null && !Array.isArray(value) ? value as Json : {})
const arr = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const str = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null)
const num = (value: unknown): number | null => {
  const n = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value
  return typeof n === "number" && Number.isSafeInteger(n) ? n : null
}
/** An ISO 8601 time as epoch ms. */
const time = (value: unknown): number | null => {
  const text = str(value)
  const ms = text === null ? NaN : Date.parse(text)
  return Number.isNaN(ms) ? null : ms
}
/** Unix seconds as epoch ms. */
const seconds = (value: unknown): number | null => {
  const n = num(value)
  return n === null ? null : n * 1000
}
const upper = (value: unknown): string | null => str(value)?.toUpperCase() ?? null
/** `lm_subscription_id` of a metadata / custom data object: a positive integer, as a number or a string. */
const lmId = (...metadata: ReadonlyArray<unknown>): number | null => {
  for (const m of metadata) {
    const id = num(obj(m).lm_subscription_id)
    if (id !== null && id > 0) return id
  }
  return null
}

/** A provider interval (`day`, `week`, `month`, `year`) as the domain's billing period. */
const billingPeriodOf = (interval: unknown): Model.BillingPeriod | undefined => {
  const text = str(interval)
  return text === "day" || text === "week" || text === "month" || text === "year" ? text : undefined
}

/** What a mapping reads from an event's object: the move, or null for nothing. */
type Mapping = (object: Json, event: Json) => Model.BillingMove | null

const simple = (_tag: "Pause" | "Resume" | "CancelAtPeriodEnd" | "Cancelled" | "Link"): Mapping => () => ({ _tag })

// ---- Stripe ------------------------------------------------------------------------------------------------

/** A Stripe invoice's service period: the span of its subscription lines (`invoice.period_*` is the period before). */
const stripeInvoicePeriod = (invoice: Json): { start: number; end: number } | null => {
  const periods = arr(obj(invoice.lines).data).map((line) => obj(obj(line).period))
  const starts = periods.map((p) => seconds(p.start)).filter((n): n is number => n !== null)
  const ends = periods.map((p) => seconds(p.end)).filter((n): n is number => n !== null)
  return starts.length === 0 || ends.length === 0 ? null : { start: Math.min(...starts), end: Math.max(...ends) }
}

/** A Stripe subscription's plan: the sum of its items' prices and the first item's interval. */
const stripePlan = (subscription: Json): Model.BillingMove => {
  const items = arr(obj(subscription.items).data).map(obj)
  const prices = items.map((item) => ({ price: obj(item.price), quantity: num(item.quantity) ?? 1 }))
  const amounts = prices.map((p) => num(p.price.unit_amount))
  const recurring = obj(prices[0]?.price.recurring)
  return {
    _tag: "Switch",
    amount: amounts.every((a): a is number => a !== null) && amounts.length > 0 ? amounts.reduce<number>((sum, a, i) => sum + a * prices[i]!.quantity, 0) : null,
    currency: upper(prices[0]?.price.currency ?? subscription.currency),
    billingPeriod: billingPeriodOf(recurring.interval),
    billingInterval: num(recurring.interval_count) ?? undefined
  }
}

const stripePaid: Mapping = (invoice) => {
  const period = stripeInvoicePeriod(invoice)
  if (period === null) return null
  return {
    _tag: "Paid",
    periodStart: period.start,
    periodEnd: period.end,
    amount: num(invoice.amount_paid),
    currency: upper(invoice.currency),
    transactionId: str(invoice.id)
  }
}

/** Stripe event types → moves (`data.object` is the subscription or the invoice). */
export const stripeMoves: Readonly<Record<string, Mapping>> = {
  "customer.subscription.created": simple("Link"),
  "invoice.paid": stripePaid,
  "invoice.payment_failed": (invoice) => ({ _tag: "PaymentFailed", transactionId: str(invoice.id) }),
  "customer.subscription.paused": simple("Pause"),
  "customer.subscription.resumed": simple("Resume"),
  // cancel at the period end is set on the subscription; otherwise an update is a plan or price change (or none)
  "customer.subscription.updated": (subscription) =>
    subscription.cancel_at_period_end === true || num(subscription.cancel_at) !== null ? { _tag: "CancelAtPeriodEnd" } : stripePlan(subscription),
  "customer.subscription.deleted": simple("Cancelled")
}

// ---- Paddle Billing ----------------------------------------------------------------------------------------

/** A Paddle subscription's plan: the sum of its items' unit prices and the first item's billing cycle. */
const paddlePlan = (subscription: Json): Model.BillingMove => {
  const items = arr(subscription.items).map(obj)
  const amounts = items.map((item) => {
    const amount = num(obj(obj(item.price).unit_price).amount)
    return amount === null ? null : amount * (num(item.quantity) ?? 1)
  })
  const cycle = obj(subscription.billing_cycle ?? obj(items[0]?.price).billing_cycle)
  return {
    _tag: "Switch",
    amount: amounts.length > 0 && amounts.every((a): a is number => a !== null) ? amounts.reduce<number>((sum, a) => sum + a, 0) : null,
    currency: upper(subscription.currency_code ?? obj(obj(items[0]?.price).unit_price).currency_code),
    billingPeriod: billingPeriodOf(cycle.interval),
    billingInterval: num(cycle.frequency) ?? undefined
  }
}

const paddlePaid: Mapping = (transaction) => {
  const period = obj(transaction.billing_period)
  const start = time(period.starts_at)
  const end = time(period.ends_at)
  if (start === null || end === null) return null
  return {
    _tag: "Paid",
    periodStart: start,
    periodEnd: end,
    amount: num(obj(obj(transaction.details).totals).grand_total),
    currency: upper(transaction.currency_code),
    transactionId: str(transaction.id)
  }
}

/** Paddle Billing event types → moves (`data` is the subscription or the transaction). */
export const paddleMoves: Readonly<Record<string, Mapping>> = {
  "subscription.created": simple("Link"),
  "subscription.activated": simple("Link"),
  "transaction.completed": paddlePaid,
  "transaction.payment_failed": (transaction) => ({ _tag: "PaymentFailed", transactionId: str(transaction.id) }),
  "subscription.paused": simple("Pause"),
  "subscription.resumed": simple("Resume"),
  // a scheduled cancel is a cancel at the period end; otherwise an update is a plan or price change (or none)
  "subscription.updated": (subscription) =>
    str(obj(subscription.scheduled_change).action) === "cancel" ? { _tag: "CancelAtPeriodEnd" } : paddlePlan(subscription),
  "subscription.canceled": simple("Cancelled")
}

// ---- Lemon Squeezy -----------------------------------------------------------------------------------------

/** Lemon Squeezy event names → moves (`data` is the subscription or the subscription invoice). */
export const lemonSqueezyMoves: Readonly<Record<string, Mapping>> = {
  "subscription_created": simple("Link"),
  // an invoice names no period: it pays one period of the subscription's calendar from when it was paid
  "subscription_payment_success": (invoice) => {
    const attributes = obj(invoice.attributes)
    const paidAt = time(attributes.created_at)
    if (paidAt === null) return null
    return { _tag: "Paid", periodStart: paidAt, periodEnd: null, amount: num(attributes.total), currency: upper(attributes.currency), transactionId: str(invoice.id) }
  },
  "subscription_payment_failed": (invoice) => ({ _tag: "PaymentFailed", transactionId: str(invoice.id) }),
  "subscription_paused": simple("Pause"),
  "subscription_unpaused": simple("Resume"),
  "subscription_resumed": simple("Resume"),
  // cancelled: it ends at the end of the paid period (`ends_at`); expired: it has ended
  "subscription_cancelled": simple("CancelAtPeriodEnd"),
  "subscription_expired": simple("Cancelled"),
  // a new variant: Lemon Squeezy's subscription carries no price, so the amount stays until the next invoice
  "subscription_plan_changed": () => ({ _tag: "Switch", amount: null, currency: null })
}

// ---- the envelope of each provider's events -----------------------------------------------------------------

const malformed = (what: string) =>
  Effect.fail(Errors.invalidParam("body", `is not a provider event: ${what}`))

/** The normalised event of a verified body (`raw` is the body text: Lemon Squeezy's event id is its SHA-256). */
export const normalise: Record<
  Model.BillingProvider,
  (body: VerifiedBody, raw: string) => Effect.Effect<Model.ProviderEvent, Errors.InvalidParam>
> = {
  stripe: (event) => {
    const id = str(event.id)
    const type = str(event.type)
    const occurredAt = seconds(event.created)
    if (id === null || type === null || occurredAt === null) return malformed("no id, type or created")
    const object = obj(obj(event.data).object)
    const isInvoice = str(object.object) === "invoice"
    const parent = obj(obj(object.parent).subscription_details)
    const details = obj(object.subscription_details)
    return Effect.succeed({
      provider: "stripe",
      eventId: id,
      type,
      occurredAt,
      externalId: isInvoice ? str(object.subscription) ?? str(parent.subscription) : str(object.id),
      lmSubscriptionId: isInvoice ? lmId(details.metadata, parent.metadata, object.metadata) : lmId(object.metadata),
      move: stripeMoves[type]?.(object, event) ?? null
    })
  },
  paddle: (event) => {
    const id = str(event.event_id)
    const type = str(event.event_type)
    const occurredAt = time(event.occurred_at)
    if (id === null || type === null || occurredAt === null) return malformed("no event_id, event_type or occurred_at")
    const data = obj(event.data)
    const isTransaction = type.startsWith("transaction.")
    return Effect.succeed({
      provider: "paddle",
      eventId: id,
      type,
      occurredAt,
      externalId: isTransaction ? str(data.subscription_id) : str(data.id),
      lmSubscriptionId: lmId(data.custom_data),
      move: paddleMoves[type]?.(data, event) ?? null
    })
  },
  lemonsqueezy: (event, raw) => {
    const meta = obj(event.meta)
    const type = str(meta.event_name)
    const data = obj(event.data)
    const attributes = obj(data.attributes)
    const occurredAt = time(attributes.updated_at) ?? time(attributes.created_at)
    if (type === null || occurredAt === null) return malformed("no meta.event_name or data.attributes.updated_at")
    const isInvoice = str(data.type) === "subscription-invoices"
    return Effect.succeed({
      provider: "lemonsqueezy",
      eventId: createHash("sha256").update(raw, "utf8").digest("hex"),
      type,
      occurredAt,
      externalId: isInvoice ? str(attributes.subscription_id) : str(data.id),
      lmSubscriptionId: lmId(meta.custom_data),
      move: lemonSqueezyMoves[type]?.(data, event) ?? null
    })
  }
}
