/**
 * The domain's `SubscriptionRepository` on `lm_subscriptions` and `lm_subscription_renewals`. The period-end job
 * claims due rows with FOR UPDATE SKIP LOCKED on the partial index of `due_at`, so several processes on one
 * database share the work and none makes a move twice.
 */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Errors, Model, Ports } from "@lm/domain"
import type { SqlError } from "effect/sql/SqlError"
import { orUnavailable } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** The column of each field whose name differs. */
const subscriptionColumnNames = {
  userId: "user_id",
  productId: "product_id",
  licenseId: "license_id",
  billingPeriod: "billing_period",
  billingInterval: "billing_interval",
  paymentMethod: "payment_method",
  trialEnd: "trial_end",
  billingAnchor: "billing_anchor",
  currentPeriodStart: "current_period_start",
  currentPeriodEnd: "current_period_end",
  nextPaymentAt: "next_payment_at",
  lastPaymentAt: "last_payment_at",
  endDate: "end_date",
  cancelAtPeriodEnd: "cancel_at_period_end",
  pausedAt: "paused_at",
  cancelledAt: "cancelled_at",
  billingProvider: "billing_provider",
  externalId: "external_id",
  createdAt: "created_at",
  updatedAt: "updated_at"
} as const

const Item = Schema.Struct({ id: Schema.Int, productId: Schema.NullOr(Schema.Int), quantity: Schema.Int, amount: Schema.Int })

/** A row of `lm_subscriptions` (without `due_at`, which only the store reads). */
const SubscriptionRow = Schema.Struct({
  id: Int8,
  status: Model.SubscriptionStatus,
  userId: Int8,
  productId: Schema.NullOr(Int8),
  licenseId: Int8,
  billingPeriod: Model.BillingPeriod,
  billingInterval: Schema.Int,
  amount: Int8,
  currency: Schema.String,
  paymentMethod: Schema.NullOr(Schema.String),
  trialEnd: Schema.NullOr(Timestamp),
  billingAnchor: Timestamp,
  currentPeriodStart: Timestamp,
  currentPeriodEnd: Timestamp,
  nextPaymentAt: Schema.NullOr(Timestamp),
  lastPaymentAt: Schema.NullOr(Timestamp),
  endDate: Schema.NullOr(Timestamp),
  cancelAtPeriodEnd: Schema.Boolean,
  pausedAt: Schema.NullOr(Timestamp),
  cancelledAt: Schema.NullOr(Timestamp),
  items: Schema.Array(Item),
  billingProvider: Schema.NullOr(Model.BillingProvider),
  externalId: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  revision: Schema.Int
}).pipe(Schema.encodeKeys(subscriptionColumnNames))

const subscriptionRows = rowsOf(SubscriptionRow, "lm_subscriptions")
const firstSubscription = firstOf(SubscriptionRow, "lm_subscriptions")
const oneSubscription = oneOf(SubscriptionRow, "lm_subscriptions")
const count = oneOf(Count, "a count")

const Plan = Schema.Struct({ amount: Schema.Int, billingPeriod: Model.BillingPeriod, billingInterval: Schema.Int, productId: Schema.NullOr(Schema.Int) })
const Proration = Schema.Struct({ credit: Schema.Int, charge: Schema.Int, net: Schema.Int })

const renewalColumnNames = {
  subscriptionId: "subscription_id",
  periodStart: "period_start",
  periodEnd: "period_end",
  from: "plan_from",
  to: "plan_to",
  transactionId: "transaction_id",
  createdAt: "created_at"
} as const

/** A row of `lm_subscription_renewals`. */
const RenewalRow = Schema.Struct({
  id: Int8,
  subscriptionId: Int8,
  type: Model.RenewalType,
  amount: Int8,
  currency: Schema.String,
  status: Model.RenewalStatus,
  periodStart: Timestamp,
  periodEnd: Timestamp,
  proration: Schema.NullOr(Proration),
  from: Schema.NullOr(Plan),
  to: Schema.NullOr(Plan),
  transactionId: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).pipe(Schema.encodeKeys(renewalColumnNames))

const renewalRows = rowsOf(RenewalRow, "lm_subscription_renewals")

/** A group of `totals`: the sum is decimal text (numeric, which a bigint column's sum is), read as a bigint. */
const TotalRow = Schema.Struct({
  status: Model.SubscriptionStatus,
  currency: Schema.String,
  billingPeriod: Model.BillingPeriod,
  billingInterval: Schema.Int,
  count: Int8,
  amount: Schema.BigIntFromString
}).pipe(Schema.encodeKeys({ billingPeriod: "billing_period", billingInterval: "billing_interval" }))
const totalRows = rowsOf(TotalRow, "subscription totals")
const oneRenewal = oneOf(RenewalRow, "lm_subscription_renewals")

export const layer = Layer.effect(
  Ports.SubscriptionRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient

    const columns = (s: Model.SubscriptionDraft, dueAt: number | null) => ({
      ...Struct.renameKeys({
        status: s.status,
        userId: s.userId,
        productId: s.productId,
        licenseId: s.licenseId,
        billingPeriod: s.billingPeriod,
        billingInterval: s.billingInterval,
        amount: s.amount,
        currency: s.currency,
        paymentMethod: s.paymentMethod,
        trialEnd: date(s.trialEnd),
        billingAnchor: date(s.billingAnchor),
        currentPeriodStart: date(s.currentPeriodStart),
        currentPeriodEnd: date(s.currentPeriodEnd),
        nextPaymentAt: date(s.nextPaymentAt),
        lastPaymentAt: date(s.lastPaymentAt),
        endDate: date(s.endDate),
        cancelAtPeriodEnd: s.cancelAtPeriodEnd,
        pausedAt: date(s.pausedAt),
        cancelledAt: date(s.cancelledAt),
        items: sql.json(s.items),
        billingProvider: s.billingProvider,
        externalId: s.externalId,
        createdAt: date(s.createdAt),
        updatedAt: date(s.updatedAt)
      }, subscriptionColumnNames),
      due_at: date(dueAt)
    })

    /** The unique `(billing_provider, external_id)` taken by another subscription: 409 `subscription_exists`. */
    const uniqueExternalId = <A, R>(effect: Effect.Effect<A, SqlError, R>) =>
      Effect.catchIf(effect, (e) => e.reason._tag === "UniqueViolation", () => Effect.fail(Errors.subscriptionExists()))

    return Ports.SubscriptionRepository.of({
      insert: (draft, dueAt) =>
        sql`INSERT INTO lm_subscriptions ${sql.insert({ ...columns(draft, dueAt), revision: 1 })} RETURNING *`.pipe(
          uniqueExternalId,
          Effect.flatMap(oneSubscription),
          orUnavailable
        ),
      findById: (id) => sql`SELECT * FROM lm_subscriptions WHERE id = ${id}`.pipe(Effect.flatMap(firstSubscription), orUnavailable),
      findByExternalId: (provider, externalId) =>
        sql`SELECT * FROM lm_subscriptions WHERE billing_provider = ${provider} AND external_id = ${externalId}`.pipe(
          Effect.flatMap(firstSubscription),
          orUnavailable
        ),
      lockById: (id) =>
        sql`SELECT * FROM lm_subscriptions WHERE id = ${id} FOR UPDATE`.pipe(Effect.flatMap(firstSubscription), orUnavailable),
      list: (query) => {
        const filters = [
          ...(query.status !== undefined ? [sql`status = ${query.status}`] : []),
          ...(query.userId !== undefined ? [sql`user_id = ${query.userId}`] : []),
          ...(query.productId !== undefined ? [sql`product_id = ${query.productId}`] : [])
        ]
        const where = filters.length === 0 ? sql`TRUE` : sql.and(filters)
        return Effect.all({
          items: sql`SELECT * FROM lm_subscriptions WHERE ${where} ORDER BY id
                     LIMIT ${query.perPage} OFFSET ${(query.page - 1) * query.perPage}`.pipe(Effect.flatMap(subscriptionRows)),
          total: sql`SELECT count(*) AS n FROM lm_subscriptions WHERE ${where}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      },
      update: (s, dueAt) =>
        sql`UPDATE lm_subscriptions SET ${sql.update({ ...columns(s, dueAt), revision: s.revision })} WHERE id = ${s.id} RETURNING *`.pipe(
          uniqueExternalId,
          Effect.flatMap(firstSubscription),
          Effect.flatMap((updated) => updated === undefined ? Effect.die(new Error(`no subscription with id ${s.id} to update`)) : Effect.succeed(updated)),
          orUnavailable
        ),
      claimDue: (now, limit) =>
        sql`SELECT * FROM lm_subscriptions WHERE due_at IS NOT NULL AND due_at <= ${date(now)}
            ORDER BY due_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`.pipe(Effect.flatMap(subscriptionRows), orUnavailable),
      totals: sql`
        SELECT status, currency, billing_period, billing_interval, count(*) AS count, sum(amount)::text AS amount
        FROM lm_subscriptions GROUP BY status, currency, billing_period, billing_interval`.pipe(Effect.flatMap(totalRows), orUnavailable),
      insertRenewal: (subscriptionId, r) =>
        sql`INSERT INTO lm_subscription_renewals ${
          sql.insert(Struct.renameKeys({
            subscriptionId,
            type: r.type,
            amount: r.amount,
            currency: r.currency,
            status: r.status,
            periodStart: date(r.periodStart),
            periodEnd: date(r.periodEnd),
            proration: r.proration === null ? null : sql.json(r.proration),
            from: r.from === null ? null : sql.json(r.from),
            to: r.to === null ? null : sql.json(r.to),
            transactionId: r.transactionId,
            createdAt: date(r.createdAt)
          }, renewalColumnNames))
        } RETURNING *`.pipe(Effect.flatMap(oneRenewal), orUnavailable),
      listRenewals: (subscriptionId, page) =>
        Effect.all({
          items: sql`SELECT * FROM lm_subscription_renewals WHERE subscription_id = ${subscriptionId}
                     ORDER BY id LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`.pipe(Effect.flatMap(renewalRows)),
          total: sql`SELECT count(*) AS n FROM lm_subscription_renewals WHERE subscription_id = ${subscriptionId}`.pipe(
            Effect.flatMap(count),
            Effect.map((r) => r.n)
          )
        }).pipe(orUnavailable)
    })
  })
)
