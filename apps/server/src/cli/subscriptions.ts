/** `lm subscriptions …`: subscriptions and their renewals (CONTRACT §10) against a running server. */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer } from "./Server.js"

const id = Argument.Int("id").pipe(Argument.withDescription("The subscription's id"))
const columns = ["id", "user_id", "status", "billing_period", "billing_interval", "amount", "currency", "next_payment_at"]
const renewalColumns = ["id", "type", "status", "amount", "transaction_id", "created_at"]

const period = Flag.Literals("billing-period", Model.billingPeriods).pipe(Flag.withDescription("The unit of a billing period"))
const interval = Flag.Int("billing-interval").pipe(Flag.withDescription("Units per period (1-365)"))
const amount = Flag.String("amount").pipe(Flag.withDescription("Decimal amount per period, e.g. 19.99"))

const list = Command.make("list", {
  json,
  status: Flag.Literals("status", Model.subscriptionStatuses).pipe(Flag.withDescription("Only this status"), Flag.optional),
  user_id: Flag.Int("user-id").pipe(Flag.withDescription("Only this user"), Flag.optional),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Only this product"), Flag.optional),
  ...paging
}, ({ json: asJson, ...flags }) =>
  onServer((api) => api.subscriptions.list({ query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "subscriptions", r.data.subscriptions, r.meta, columns))
  )).pipe(Command.withDescription("List subscriptions"), Command.withAlias("ls"))

const create = Command.make("create", {
  json,
  user_id: Flag.Int("user-id").pipe(Flag.withDescription("The subscriber")),
  billing_period: period,
  billing_interval: interval.pipe(Flag.withDefault(1)),
  amount,
  currency: Flag.String("currency").pipe(Flag.withDescription("ISO 4217 code, e.g. USD")),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Its product"), Flag.optional)
}, ({ json: asJson, user_id, billing_period, billing_interval, amount, currency, ...flags }) =>
  onServer((api) =>
    api.subscriptions.create({ payload: { user_id, billing_period, billing_interval, amount, currency, ...given(flags) } })
  ).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(Command.withDescription("Create a subscription (and its license)"))

const show = Command.make("show", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.subscriptions.get({ params: { id } })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Show a subscription with its license")
  )

/** A move of a subscription that takes no fields. */
const move = (name: "pause" | "resume", description: string) =>
  Command.make(name, { json, id }, ({ json: asJson, id }) =>
    onServer((api) => api.subscriptions[name]({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
      Command.withDescription(description)
    )

const cancel = Command.make("cancel", {
  json,
  id,
  at_period_end: Flag.Boolean("at-period-end").pipe(Flag.withDescription("Cancel when the period ends"), Flag.withDefault(false))
}, ({ json: asJson, id, at_period_end }) =>
  onServer((api) => api.subscriptions.cancel({ params: { id }, payload: { at_period_end } })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Cancel a subscription, now or at the period end")
  )

const renew = Command.make("renew", {
  json,
  id,
  transaction_id: Flag.String("transaction-id").pipe(Flag.withDescription("The payment's id at the provider"), Flag.optional)
}, ({ json: asJson, id, ...flags }) =>
  onServer((api) => api.subscriptions.renew({ params: { id }, payload: given(flags) })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Record a renewal payment (early renewal)")
  )

const switchPlan = Command.make("switch", {
  json,
  id,
  amount,
  billing_period: period.pipe(Flag.optional),
  billing_interval: interval.pipe(Flag.optional),
  max_activations: Flag.Int("max-activations").pipe(Flag.withDescription("The license's new seat limit"), Flag.optional)
}, ({ json: asJson, id, amount, ...flags }) =>
  onServer((api) => api.subscriptions.switch({ params: { id }, payload: { amount, ...given(flags) } })).pipe(
    Effect.flatMap((r) => printOne(asJson, r.data))
  )).pipe(Command.withDescription("Switch a subscription to another plan"))

const renewals = Command.make("renewals", { json, id, ...paging }, ({ json: asJson, id, ...flags }) =>
  onServer((api) => api.subscriptions.renewals({ params: { id }, query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "renewals", r.data.renewals, r.meta, renewalColumns))
  )).pipe(Command.withDescription("A subscription's renewal history"))

export const subscriptions = Command.make("subscriptions").pipe(
  Command.withDescription("Subscriptions on the server in LM_URL: list, create, show, pause, resume, cancel, renew, switch, renewals"),
  Command.withSubcommands([list, create, show, move("pause", "Pause (the license is suspended)"), move("resume", "Resume"), cancel, renew, switchPlan, renewals])
)
