/**
 * The domain's `BillingEventRepository` on `lm_billing_events`. The first receipt of a provider's event id claims
 * it: `ON CONFLICT … DO NOTHING` on the partial unique index over the rows that are not `duplicate`, which waits
 * for another transaction inserting the same id and then answers no row, so an event is applied once across
 * processes.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, firstOf, oneOf, rowsOf, tableOf, Timestamp } from "./rows.js"

/** A row of `lm_billing_events`. */
const billingEvents = tableOf(Model.BillingEvent, { generated: ["id"] })
const BillingEventRow = billingEvents.Row

const eventRows = rowsOf(BillingEventRow, "lm_billing_events")
const firstEvent = firstOf(BillingEventRow, "lm_billing_events")
const count = oneOf(Count, "a count")
const LastApplied = Schema.Struct({ at: Schema.NullOr(Timestamp) })
const lastApplied = oneOf(LastApplied, "the last applied billing event")

export const layer = Layer.effect(
  Ports.BillingEventRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    return Ports.BillingEventRepository.of({
      record: (e) =>
        sql`INSERT INTO lm_billing_events ${
          sql.insert(billingEvents.columns(e))
        } ON CONFLICT (provider, event_id) WHERE outcome <> 'duplicate' DO NOTHING RETURNING *`.pipe(
          Effect.flatMap(firstEvent),
          orUnavailable
        ),
      lastAppliedAt: (subscriptionId) =>
        sql`SELECT max(occurred_at) AS at FROM lm_billing_events WHERE subscription_id = ${subscriptionId} AND outcome = 'applied'`.pipe(
          Effect.flatMap(lastApplied),
          Effect.map((row) => row.at),
          orUnavailable
        ),
      list: (query) => {
        const filters = [
          ...(query.outcome !== undefined ? [sql`outcome = ${query.outcome}`] : []),
          ...(query.provider !== undefined ? [sql`provider = ${query.provider}`] : [])
        ]
        const where = filters.length === 0 ? sql`TRUE` : sql.and(filters)
        return Effect.all({
          items: sql`SELECT * FROM lm_billing_events WHERE ${where} ORDER BY id DESC
                     LIMIT ${query.perPage} OFFSET ${(query.page - 1) * query.perPage}`.pipe(Effect.flatMap(eventRows)),
          total: sql`SELECT count(*) AS n FROM lm_billing_events WHERE ${where}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      }
    })
  })
)
