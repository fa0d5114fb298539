/**
 * Handlers of the `subscriptions` group: each parses the wire's money with the domain's `Money` (in the
 * subscription's currency), calls one method of the domain's `Subscriptions` service and writes the result with
 * `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { type Model, Money, type Services, type Subscription, Subscriptions } from "@lm/domain"
import { Api, ok } from "@lm/api"
import { licenseSettingsFromWire, licenseToWire, listMeta, pageRequest, renewalToWire, subscriptionToWire } from "@lm/api/wire"
import { group } from "./Group.js"

type ItemBody = { readonly product_id?: number | null; readonly quantity?: number; readonly amount: string }

/** Parses an amount (and items' amounts) in `currency`; the first bad one is a 400 naming its field. */
const amountOf = (field: string, text: string, currency: string) => Effect.fromResult(Money.parseAmount(field, text, currency))

const itemsOf = (items: ReadonlyArray<ItemBody>, currency: string) =>
  Effect.forEach(items, (item, i) =>
    Effect.map(amountOf(`items[${i}].amount`, item.amount, currency), (amount): Model.SubscriptionItem => ({
      id: i + 1,
      productId: item.product_id ?? null,
      quantity: item.quantity ?? 1,
      amount
    })))

const detailToWire = (detail: Services.SubscriptionDetail) => ok({ ...subscriptionToWire(detail.subscription), license: licenseToWire(detail.license) })

/** The `subscriptions` handlers, on the domain's `Subscriptions` service. */
export const SubscriptionsHandlers = group(Api, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const currencyOf = (id: number) => Effect.map(subscriptions.get(id), (d) => d.subscription.currency)
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return subscriptions.list({ status: query.status, userId: query.user_id, productId: query.product_id, ...page }).pipe(
          Effect.map((result) => ok({ subscriptions: result.items.map(subscriptionToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      },
      create: ({ payload }) =>
        Effect.gen(function*() {
          const currency = yield* Effect.fromResult(Money.checkCurrency("currency", payload.currency))
          const amount = yield* amountOf("amount", payload.amount, currency)
          const items = yield* itemsOf(payload.items ?? [], currency)
          const license = payload.license === undefined ? {} : {
            ...licenseSettingsFromWire(payload.license),
            licenseKey: payload.license.license_key ?? undefined,
            generatorId: payload.license.generator_id ?? undefined
          }
          return yield* subscriptions.create({
            subscription: {
              userId: payload.user_id,
              productId: payload.product_id ?? null,
              billingPeriod: payload.billing_period,
              billingInterval: payload.billing_interval,
              amount,
              currency,
              paymentMethod: payload.payment_method ?? null,
              trialDays: payload.trial_days ?? 0,
              startDate: payload.start_date ?? null,
              endDate: payload.end_date ?? null,
              items,
              billingProvider: payload.billing_provider,
              externalId: payload.external_id
            },
            licenseKey: payload.license_key,
            license: payload.generator_id === undefined ? license : { ...license, generatorId: payload.generator_id }
          })
        }).pipe(Effect.map(detailToWire)),
      get: ({ params }) => subscriptions.get(params.id).pipe(Effect.map(detailToWire)),
      update: ({ params, payload }) =>
        Effect.gen(function*() {
          const currency = yield* currencyOf(params.id)
          const patch: Subscription.SubscriptionUpdate = {
            billingPeriod: payload.billing_period,
            billingInterval: payload.billing_interval,
            amount: payload.amount === undefined ? undefined : yield* amountOf("amount", payload.amount, currency),
            paymentMethod: payload.payment_method,
            nextPaymentAt: payload.next_payment_at,
            endDate: payload.end_date,
            items: payload.items === undefined ? undefined : yield* itemsOf(payload.items, currency),
            billingProvider: payload.billing_provider,
            externalId: payload.external_id
          }
          return yield* subscriptions.update(params.id, patch)
        }).pipe(Effect.map(detailToWire)),
      pause: ({ params }) => subscriptions.pause(params.id).pipe(Effect.map(detailToWire)),
      resume: ({ params }) => subscriptions.resume(params.id).pipe(Effect.map(detailToWire)),
      cancel: ({ params, payload }) =>
        subscriptions.cancel(params.id, payload.at_period_end === true).pipe(Effect.map(detailToWire)),
      renew: ({ params, payload }) =>
        subscriptions.renew(params.id, payload.transaction_id ?? null).pipe(Effect.map(detailToWire)),
      switch: ({ params, payload }) =>
        Effect.gen(function*() {
          const currency = yield* currencyOf(params.id)
          return yield* subscriptions.switchPlan(params.id, {
            amount: yield* amountOf("amount", payload.amount, currency),
            billingPeriod: payload.billing_period,
            billingInterval: payload.billing_interval,
            productId: payload.product_id,
            maxActivations: payload.max_activations
          })
        }).pipe(Effect.map(detailToWire)),
      renewals: ({ params, query }) => {
        const page = pageRequest(query)
        return subscriptions.renewals(params.id, page).pipe(
          Effect.map((result) => ok({ renewals: result.items.map(renewalToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      }
    })
  }))


