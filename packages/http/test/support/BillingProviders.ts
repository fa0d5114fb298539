/**
 * Webhook deliveries as Stripe, Paddle Billing and Lemon Squeezy send them (CONTRACT §20): each provider's own
 * payload shapes (Stripe's event with a subscription or an invoice, Paddle's notification with a subscription or
 * a transaction, Lemon Squeezy's `meta` + JSON:API `data`), signed the way each provider signs: Stripe with its
 * library's `webhooks.generateTestHeaderString`, Paddle (`Paddle-Signature: ts=…;h1=…`, the HMAC-SHA256 of
 * `ts:body`) and Lemon Squeezy (`X-Signature`, the HMAC-SHA256 of the body) by their documented algorithms.
 */
import { createHmac, randomUUID } from "node:crypto"
import type { Model } from "@lm/domain"
import Stripe from "stripe"
import { expect } from "vitest"
import type { TestApp } from "./App.js"

/** A delivery: the raw body and the headers the provider sends with it. */
export interface Delivery {
  readonly body: string
  readonly headers: Record<string, string>
}

/** The provider subscription an event is about. */
export interface Target {
  /** The provider's subscription id. */
  readonly externalId: string
  /** `lm_subscription_id` in its metadata / custom data (null: none). */
  readonly lmId: number | null
  /** The plan: minor units per `days`-day period. */
  readonly amount: number
  readonly days: number
  /** Lower-case at Stripe, upper-case at the others. */
  readonly currency: string
}

/** When the provider says the event happened (epoch ms), and an id of the payment when one is made. */
export interface At {
  readonly at: number
  /** The signature's timestamp (default now; an old one is refused). */
  readonly signedAt?: number
  /** Signs with this secret instead of the provider's. */
  readonly secret?: string
}

/** What each provider's kit sends. */
export interface ProviderKit {
  readonly provider: Model.BillingProvider
  readonly secret: string
  readonly created: (t: Target, at: At) => Delivery
  /** A paid invoice / transaction for the period `start`–`end` (Lemon Squeezy names no period: paid at `start`). */
  readonly paid: (t: Target, at: At & { readonly start: number; readonly end: number }) => Delivery
  readonly paymentFailed: (t: Target, at: At) => Delivery
  readonly paused: (t: Target, at: At) => Delivery
  readonly resumed: (t: Target, at: At) => Delivery
  /** The plan changed to `t`'s amount. */
  readonly planChanged: (t: Target, at: At) => Delivery
  readonly cancelAtPeriodEnd: (t: Target, at: At) => Delivery
  readonly cancelled: (t: Target, at: At) => Delivery
  /** Whether the kit's `planChanged` carries the new amount (Lemon Squeezy's subscription carries no price). */
  readonly planChangeHasAmount: boolean
}

const hmacHex = (secret: string, text: string) => createHmac("sha256", secret).update(text, "utf8").digest("hex")
const id = (prefix: string) => `${prefix}${randomUUID().replaceAll("-", "").slice(0, 24)}`
const unix = (ms: number) => Math.floor(ms / 1000)
const iso = (ms: number) => new Date(ms).toISOString()

// ---- Stripe ------------------------------------------------------------------------------------------------

const stripeSubscription = (t: Target, at: number, extra: Record<string, unknown> = {}) => ({
  id: t.externalId,
  object: "subscription",
  status: "active",
  cancel_at: null,
  cancel_at_period_end: false,
  canceled_at: null,
  collection_method: "charge_automatically",
  created: unix(at),
  currency: t.currency.toLowerCase(),
  customer: "cus_RkFmpQz3Xb1a2c",
  livemode: false,
  metadata: t.lmId === null ? {} : { lm_subscription_id: String(t.lmId) },
  items: {
    object: "list",
    data: [{
      id: "si_RkFmKq0Zy1Xc2d",
      object: "subscription_item",
      quantity: 1,
      price: {
        id: "price_1QsFmpLkdIwHu7ix",
        object: "price",
        currency: t.currency.toLowerCase(),
        unit_amount: t.amount,
        type: "recurring",
        recurring: { interval: "day", interval_count: t.days, usage_type: "licensed" }
      }
    }],
    has_more: false
  },
  ...extra
})

const stripeInvoice = (t: Target, at: number, status: "paid" | "open", period: { start: number; end: number }) => ({
  id: id("in_"),
  object: "invoice",
  status,
  amount_due: t.amount,
  amount_paid: status === "paid" ? t.amount : 0,
  billing_reason: "subscription_cycle",
  created: unix(at),
  currency: t.currency.toLowerCase(),
  customer: "cus_RkFmpQz3Xb1a2c",
  period_start: unix(period.start),
  period_end: unix(period.start),
  lines: {
    object: "list",
    data: [{
      id: id("il_"),
      object: "line_item",
      amount: t.amount,
      currency: t.currency.toLowerCase(),
      period: { start: unix(period.start), end: unix(period.end) },
      parent: { type: "subscription_item_details", subscription_item_details: { subscription: t.externalId, subscription_item: "si_RkFmKq0Zy1Xc2d" } }
    }],
    has_more: false
  },
  parent: {
    type: "subscription_details",
    subscription_details: { subscription: t.externalId, metadata: t.lmId === null ? {} : { lm_subscription_id: String(t.lmId) } }
  }
})

const stripeEvent = (type: string, object: unknown, at: At, secret: string): Delivery => {
  const body = JSON.stringify({
    id: id("evt_"),
    object: "event",
    api_version: "2025-03-31.basil",
    created: unix(at.at),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type
  }, null, 2)
  const header = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: at.secret ?? secret, timestamp: unix(at.signedAt ?? Date.now()) })
  return { body, headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": header, "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" } }
}

export const stripeKit = (secret = "whsec_test_7d3c8f0b2a4e6c1d9f5b3a7e"): ProviderKit => ({
  provider: "stripe",
  secret,
  planChangeHasAmount: true,
  created: (t, at) => stripeEvent("customer.subscription.created", stripeSubscription(t, at.at), at, secret),
  paid: (t, at) => stripeEvent("invoice.paid", stripeInvoice(t, at.at, "paid", at), at, secret),
  paymentFailed: (t, at) => stripeEvent("invoice.payment_failed", stripeInvoice(t, at.at, "open", { start: at.at, end: at.at + t.days * 86_400_000 }), at, secret),
  paused: (t, at) => stripeEvent("customer.subscription.paused", stripeSubscription(t, at.at, { status: "paused" }), at, secret),
  resumed: (t, at) => stripeEvent("customer.subscription.resumed", stripeSubscription(t, at.at), at, secret),
  planChanged: (t, at) => stripeEvent("customer.subscription.updated", { ...stripeSubscription(t, at.at), previous_attributes: { items: {} } }, at, secret),
  cancelAtPeriodEnd: (t, at) =>
    stripeEvent("customer.subscription.updated", { ...stripeSubscription(t, at.at, { cancel_at_period_end: true }), previous_attributes: { cancel_at_period_end: false } }, at, secret),
  cancelled: (t, at) => stripeEvent("customer.subscription.deleted", stripeSubscription(t, at.at, { status: "canceled", ended_at: unix(at.at) }), at, secret)
})

// ---- Paddle Billing ----------------------------------------------------------------------------------------

const paddleSubscription = (t: Target, at: number, extra: Record<string, unknown> = {}) => ({
  id: t.externalId,
  status: "active",
  customer_id: "ctm_01hv8wt8nffez4p2t6typn4a5j",
  address_id: "add_01hv8wt4jcf4m1kfshjy5gbgd7",
  business_id: null,
  currency_code: t.currency,
  created_at: iso(at),
  updated_at: iso(at),
  started_at: iso(at),
  first_billed_at: iso(at),
  next_billed_at: iso(at + t.days * 86_400_000),
  paused_at: null,
  canceled_at: null,
  collection_mode: "automatic",
  billing_details: null,
  current_billing_period: { starts_at: iso(at), ends_at: iso(at + t.days * 86_400_000) },
  billing_cycle: { interval: "day", frequency: t.days },
  scheduled_change: null,
  items: [{
    status: "active",
    quantity: 1,
    recurring: true,
    created_at: iso(at),
    updated_at: iso(at),
    price: {
      id: "pri_01hv0vax6rv18t4tamj848ne4d",
      product_id: "pro_01hv0vaq1dr4q0jhr39mf7n3dc",
      description: "Pro plan",
      billing_cycle: { interval: "day", frequency: t.days },
      unit_price: { amount: String(t.amount), currency_code: t.currency }
    }
  }],
  custom_data: t.lmId === null ? null : { lm_subscription_id: String(t.lmId) },
  ...extra
})

const paddleTransaction = (t: Target, at: number, status: "completed" | "past_due", period: { start: number; end: number }) => ({
  id: id("txn_01"),
  status,
  customer_id: "ctm_01hv8wt8nffez4p2t6typn4a5j",
  subscription_id: t.externalId,
  invoice_id: status === "completed" ? id("inv_01") : null,
  currency_code: t.currency,
  origin: "subscription_recurring",
  collection_mode: "automatic",
  billing_period: { starts_at: iso(period.start), ends_at: iso(period.end) },
  details: {
    totals: { subtotal: String(t.amount), discount: "0", tax: "0", total: String(t.amount), grand_total: String(t.amount), fee: null, earnings: null, currency_code: t.currency }
  },
  custom_data: null,
  created_at: iso(at),
  updated_at: iso(at),
  billed_at: iso(at)
})

const paddleEvent = (type: string, data: unknown, at: At, secret: string): Delivery => {
  const body = JSON.stringify({ event_id: id("evt_01"), event_type: type, occurred_at: iso(at.at), notification_id: id("ntf_01"), data })
  const ts = unix(at.signedAt ?? Date.now())
  return {
    body,
    headers: { "content-type": "application/json", "paddle-signature": `ts=${ts};h1=${hmacHex(at.secret ?? secret, `${ts}:${body}`)}` }
  }
}

export const paddleKit = (secret = "pdl_ntfset_01hv8x2h5w9q1c7r3b5k8m0n2p_Qx7vZ2mN4kL8pR1sT6yU"): ProviderKit => ({
  provider: "paddle",
  secret,
  planChangeHasAmount: true,
  created: (t, at) => paddleEvent("subscription.created", paddleSubscription(t, at.at), at, secret),
  paid: (t, at) => paddleEvent("transaction.completed", paddleTransaction(t, at.at, "completed", at), at, secret),
  paymentFailed: (t, at) =>
    paddleEvent("transaction.payment_failed", paddleTransaction(t, at.at, "past_due", { start: at.at, end: at.at + t.days * 86_400_000 }), at, secret),
  paused: (t, at) => paddleEvent("subscription.paused", paddleSubscription(t, at.at, { status: "paused", paused_at: iso(at.at) }), at, secret),
  resumed: (t, at) => paddleEvent("subscription.resumed", paddleSubscription(t, at.at), at, secret),
  planChanged: (t, at) => paddleEvent("subscription.updated", paddleSubscription(t, at.at), at, secret),
  cancelAtPeriodEnd: (t, at) =>
    paddleEvent("subscription.updated", paddleSubscription(t, at.at, { scheduled_change: { action: "cancel", effective_at: iso(at.at + t.days * 86_400_000), resume_at: null } }), at, secret),
  cancelled: (t, at) => paddleEvent("subscription.canceled", paddleSubscription(t, at.at, { status: "canceled", canceled_at: iso(at.at) }), at, secret)
})

// ---- Lemon Squeezy -----------------------------------------------------------------------------------------

const lemonSubscription = (t: Target, at: number, extra: Record<string, unknown> = {}) => ({
  type: "subscriptions",
  id: t.externalId,
  attributes: {
    store_id: 31507,
    customer_id: 2951376,
    order_id: 3034513,
    order_item_id: 2981093,
    product_id: 218127,
    variant_id: 275447,
    product_name: "Pro",
    variant_name: "Monthly",
    user_name: "Ada Lovelace",
    user_email: "ada@example.com",
    status: "active",
    status_formatted: "Active",
    card_brand: "visa",
    card_last_four: "4242",
    pause: null,
    cancelled: false,
    trial_ends_at: null,
    billing_anchor: 27,
    renews_at: iso(at + t.days * 86_400_000),
    ends_at: null,
    created_at: iso(at),
    updated_at: iso(at),
    test_mode: true,
    ...extra
  },
  relationships: { store: { links: { related: "https://api.lemonsqueezy.com/v1/subscriptions/1/store" } } },
  links: { self: `https://api.lemonsqueezy.com/v1/subscriptions/${t.externalId}` }
})

const lemonInvoice = (t: Target, at: number, status: "paid" | "failed") => ({
  type: "subscription-invoices",
  id: String(Math.floor(Math.random() * 1e9)),
  attributes: {
    store_id: 31507,
    subscription_id: Number(t.externalId),
    customer_id: 2951376,
    user_name: "Ada Lovelace",
    user_email: "ada@example.com",
    billing_reason: "renewal",
    card_brand: "visa",
    card_last_four: "4242",
    currency: t.currency,
    currency_rate: "1.00000000",
    status,
    status_formatted: status === "paid" ? "Paid" : "Failed",
    refunded: false,
    refunded_at: null,
    subtotal: t.amount,
    discount_total: 0,
    tax: 0,
    total: t.amount,
    created_at: iso(at),
    updated_at: iso(at),
    test_mode: true
  },
  links: { self: "https://api.lemonsqueezy.com/v1/subscription-invoices/1" }
})

const lemonEvent = (name: string, t: Target, data: unknown, at: At, secret: string): Delivery => {
  const body = JSON.stringify({
    meta: {
      test_mode: true,
      event_name: name,
      webhook_id: "7a4b2c1d-0e9f-4a8b-b7c6-d5e4f3a2b1c0",
      ...(t.lmId === null ? {} : { custom_data: { lm_subscription_id: String(t.lmId) } })
    },
    data
  })
  return { body, headers: { "content-type": "application/json", "x-event-name": name, "x-signature": hmacHex(at.secret ?? secret, body) } }
}

export const lemonSqueezyKit = (secret = "ls_whsec_9q8w7e6r5t4y3u2i1o0p"): ProviderKit => ({
  provider: "lemonsqueezy",
  secret,
  planChangeHasAmount: false,
  created: (t, at) => lemonEvent("subscription_created", t, lemonSubscription(t, at.at), at, secret),
  paid: (t, at) => lemonEvent("subscription_payment_success", t, lemonInvoice(t, at.start, "paid"), { ...at, at: at.start }, secret),
  paymentFailed: (t, at) => lemonEvent("subscription_payment_failed", t, lemonInvoice(t, at.at, "failed"), at, secret),
  paused: (t, at) => lemonEvent("subscription_paused", t, lemonSubscription(t, at.at, { status: "paused", pause: { mode: "void", resumes_at: null } }), at, secret),
  resumed: (t, at) => lemonEvent("subscription_unpaused", t, lemonSubscription(t, at.at), at, secret),
  planChanged: (t, at) => lemonEvent("subscription_plan_changed", t, lemonSubscription(t, at.at, { variant_id: 275448, variant_name: "Yearly" }), at, secret),
  cancelAtPeriodEnd: (t, at) =>
    lemonEvent("subscription_cancelled", t, lemonSubscription(t, at.at, { status: "cancelled", cancelled: true, ends_at: iso(at.at + t.days * 86_400_000) }), at, secret),
  cancelled: (t, at) => lemonEvent("subscription_expired", t, lemonSubscription(t, at.at, { status: "expired", ends_at: iso(at.at) }), at, secret)
})

/** Every provider's kit with its default secret. */
export const kits = (): ReadonlyArray<ProviderKit> => [stripeKit(), paddleKit(), lemonSqueezyKit()]

/** The `billingSecrets` setting that turns on every kit's provider. */
export const secretsOf = (all: ReadonlyArray<ProviderKit>): Partial<Record<Model.BillingProvider, string>> =>
  Object.fromEntries(all.map((kit) => [kit.provider, kit.secret]))

/** Posts a delivery to `{api_base}/billing/{provider}/events`; answers the reply. */
export const post = async (app: TestApp, provider: string, delivery: Delivery) => {
  const response = await fetch(`${app.apiBase}/billing/${provider}/events`, { method: "POST", headers: delivery.headers, body: delivery.body })
  return { status: response.status, headers: response.headers, body: await response.json() as any }
}

/** Posts a delivery that must be taken (200); answers its outcome. */
export const deliver = async (app: TestApp, provider: string, delivery: Delivery): Promise<string> => {
  const reply = await post(app, provider, delivery)
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  return reply.body.data.outcome as string
}
