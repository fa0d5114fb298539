/**
 * The domain's `WebhookDeliveryQueue` on `lm_webhook_deliveries` and `lm_events.dispatched`. Events are claimed with
 * FOR UPDATE SKIP LOCKED, so concurrent dispatchers never fan one event out twice and none skips an event that
 * committed after a later id; deliveries are claimed for a lease in one UPDATE over a SKIP LOCKED selection, so two
 * workers never hold one delivery at once.
 */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { eventRows } from "./outbox.js"
import { Count, date, firstOf, iso, oneOf, rowsOf, tableOf } from "./rows.js"

/** `lm_webhook_deliveries`. */
const deliveries = tableOf(Model.WebhookDelivery, { generated: ["id"] })
const DeliveryRow = deliveries.Row

const deliveryRows = rowsOf(DeliveryRow, "lm_webhook_deliveries")
const firstDelivery = firstOf(DeliveryRow, "lm_webhook_deliveries")

/** What an attempt changes in a delivery, as one JSON record (times as ISO text) for `jsonb_to_recordset`. */
const attemptRecord = (d: Model.WebhookDelivery) => ({
  id: d.id,
  status: d.status,
  attempts: d.attempts,
  response_status: d.responseStatus,
  response_excerpt: d.responseExcerpt,
  last_attempt_at: iso(d.lastAttemptAt),
  next_attempt_at: iso(d.nextAttemptAt),
  locked_until: iso(d.lockedUntil)
})

const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.WebhookDeliveryQueue,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    const deliveryColumns = (d: Model.WebhookDeliveryDraft) => deliveries.columns(d)

    return Ports.WebhookDeliveryQueue.of({
      claimUndispatched: (limit) =>
        sql`SELECT id, type, occurred_at, license_id, machine_id, data FROM lm_events WHERE NOT dispatched
            ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`.pipe(Effect.flatMap(eventRows), orUnavailable),
      dispatch: (eventIds, drafts) =>
        Effect.gen(function*() {
          if (eventIds.length > 0) yield* sql`UPDATE lm_events SET dispatched = true WHERE id IN ${sql.in(eventIds)}`
          const [first, ...rest] = drafts.map(deliveryColumns)
          if (first !== undefined) {
            yield* sql`INSERT INTO lm_webhook_deliveries ${sql.insert([first, ...rest])} ON CONFLICT (webhook_id, event_id) DO NOTHING`
          }
        }).pipe(orUnavailable),
      claimDue: (now, lockedUntil, limit) =>
        sql`WITH claimed AS (UPDATE lm_webhook_deliveries SET locked_until = ${date(lockedUntil)}
            WHERE id IN (
              SELECT d.id FROM lm_webhook_deliveries d JOIN lm_webhooks w ON w.id = d.webhook_id
              WHERE d.status = 'pending' AND d.next_attempt_at <= ${date(now)} AND w.status = 'active'
                AND (d.locked_until IS NULL OR d.locked_until <= ${date(now)})
              ORDER BY d.next_attempt_at, d.id LIMIT ${limit}
              FOR UPDATE OF d SKIP LOCKED
            )
            RETURNING *)
            SELECT * FROM claimed ORDER BY next_attempt_at, id`.pipe(Effect.flatMap(deliveryRows), orUnavailable),
      update: (d) =>
        sql`UPDATE lm_webhook_deliveries SET ${sql.update(deliveryColumns(d))} WHERE id = ${d.id} RETURNING *`.pipe(
          Effect.flatMap(firstDelivery),
          Effect.map((updated) => updated ?? d),
          orUnavailable
        ),
      // One UPDATE for the batch: the attempt fields of each delivery as JSON records (a deleted one matches no row).
      recordAttempts: (attempted) =>
        attempted.length === 0
          ? Effect.void
          : sql`UPDATE lm_webhook_deliveries AS d SET status = v.status, attempts = v.attempts, response_status = v.response_status,
                  response_excerpt = v.response_excerpt, last_attempt_at = v.last_attempt_at, next_attempt_at = v.next_attempt_at,
                  locked_until = v.locked_until
                FROM jsonb_to_recordset(${JSON.stringify(attempted.map(attemptRecord))}::jsonb) AS v(id bigint, status text,
                  attempts integer, response_status integer, response_excerpt text, last_attempt_at timestamptz,
                  next_attempt_at timestamptz, locked_until timestamptz)
                WHERE d.id = v.id`.pipe(Effect.asVoid, orUnavailable),
      findById: (webhookId, id) =>
        sql`SELECT * FROM lm_webhook_deliveries WHERE id = ${id} AND webhook_id = ${webhookId}`.pipe(
          Effect.flatMap(firstDelivery),
          orUnavailable
        ),
      // Served by the partial index of pending deliveries (`lm_webhook_deliveries_due`).
      countPending: sql<{ readonly n: string }>`SELECT count(*) AS n FROM lm_webhook_deliveries WHERE status = 'pending'`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0)),
        orUnavailable
      ),
      list: (webhookId, page) =>
        Effect.all({
          items: sql`SELECT * FROM lm_webhook_deliveries WHERE webhook_id = ${webhookId}
                     ORDER BY id DESC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`.pipe(Effect.flatMap(deliveryRows)),
          total: sql`SELECT count(*) AS n FROM lm_webhook_deliveries WHERE webhook_id = ${webhookId}`.pipe(
            Effect.flatMap(count),
            Effect.map((r) => r.n)
          )
        }).pipe(orUnavailable)
    })
  })
)
