/**
 * The domain's `SubscriptionRepository` on `lm_subscriptions` and `lm_subscription_renewals`. The period-end job
 * claims due rows with FOR UPDATE SKIP LOCKED on the partial index of `due_at`, so several processes on one
 * database share the work and none makes a move twice.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Errors, Model, Ports } from "@lm/domain"
import type { SqlError } from "effect/sql/SqlError"
import { storeCalls } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, tableOf } from "./rows.js"

/**
 * A row of `lm_subscriptions` (its `due_at`, the period-end job's next moment, is written beside it and only the
 * store reads it). Its items are a `jsonb` array of the items themselves.
 */
const subscriptions = tableOf(Model.Subscription, { generated: ["id"], read: { amount: Int8 } })
const SubscriptionRow = subscriptions.Row

const subscriptionRows = rowsOf(SubscriptionRow, "lm_subscriptions")
const firstSubscription = firstOf(SubscriptionRow, "lm_subscriptions")
const oneSubscription = oneOf(SubscriptionRow, "lm_subscriptions")
const count = oneOf(Count, "a count")

/** A row of `lm_subscription_renewals`: its plans are `jsonb` columns `plan_from` and `plan_to`. */
const renewals = tableOf(Model.RenewalRecord, { generated: ["id"], columns: { from: "plan_from", to: "plan_to" }, read: { amount: Int8 } })
const RenewalRow = renewals.Row

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
    const orUnavailable = yield* storeCalls

    const columns = (s: Omit<Model.Subscription, "id">, dueAt: number | null) => ({
      ...subscriptions.columns(s, date, (json) => sql.json(json)),
      due_at: date(dueAt)
    })

    /** The unique `(billing_provider, external_id)` taken by another subscription: 409 `subscription_exists`. */
    const uniqueExternalId = <A, R>(effect: Effect.Effect<A, SqlError, R>) =>
      Effect.catchIf(effect, (e) => e.reason._tag === "UniqueViolation", () => Effect.fail(Errors.subscriptionExists()))

    return Ports.SubscriptionRepository.of({
      insert: (draft, dueAt) =>
        sql`INSERT INTO lm_subscriptions ${sql.insert(columns({ ...draft, revision: 1 }, dueAt))} RETURNING *`.pipe(
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
        sql`UPDATE lm_subscriptions SET ${sql.update(columns(s, dueAt))} WHERE id = ${s.id} RETURNING *`.pipe(
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
          sql.insert(renewals.columns({ ...r, subscriptionId }, date, (json) => sql.json(json)))
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
