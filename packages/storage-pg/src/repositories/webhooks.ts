/** The domain's `WebhookRepository` on `lm_webhooks` (a webhook's deliveries go with it: ON DELETE CASCADE). */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** The column of each field of a webhook whose name differs. */
const webhookColumnNames = {
  sealedSecret: "secret",
  failingSince: "failing_since",
  createdAt: "created_at",
  updatedAt: "updated_at"
} as const

/** A row of `lm_webhooks`. */
const WebhookRow = Schema.Struct({
  id: Int8,
  name: Schema.String,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  status: Model.WebhookStatus,
  sealedSecret: Schema.String,
  failingSince: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).pipe(Schema.encodeKeys(webhookColumnNames))

const webhookRows = rowsOf(WebhookRow, "lm_webhooks")
const firstWebhook = firstOf(WebhookRow, "lm_webhooks")
const oneWebhook = oneOf(WebhookRow, "lm_webhooks")

const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.WebhookRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient

    const webhookColumns = (w: Model.WebhookDraft) =>
      Struct.renameKeys({
        name: w.name,
        url: w.url,
        events: sql.json(w.events),
        status: w.status,
        sealedSecret: w.sealedSecret,
        failingSince: date(w.failingSince),
        createdAt: date(w.createdAt),
        updatedAt: date(w.updatedAt)
      }, webhookColumnNames)

    return Ports.WebhookRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_webhooks ${sql.insert(webhookColumns(draft))} RETURNING *`.pipe(Effect.flatMap(oneWebhook), orUnavailable),
      findById: (id) => sql`SELECT * FROM lm_webhooks WHERE id = ${id}`.pipe(Effect.flatMap(firstWebhook), orUnavailable),
      list: (page) =>
        Effect.all({
          items: sql`SELECT * FROM lm_webhooks ORDER BY id ASC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`.pipe(
            Effect.flatMap(webhookRows)
          ),
          total: sql`SELECT count(*) AS n FROM lm_webhooks`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable),
      listActive: sql`SELECT * FROM lm_webhooks WHERE status = 'active' ORDER BY id`.pipe(Effect.flatMap(webhookRows), orUnavailable),
      lockById: (id) => sql`SELECT * FROM lm_webhooks WHERE id = ${id} FOR UPDATE`.pipe(Effect.flatMap(firstWebhook), orUnavailable),
      update: (w) =>
        sql`UPDATE lm_webhooks SET ${sql.update(webhookColumns(w))} WHERE id = ${w.id} RETURNING *`.pipe(
          Effect.flatMap(firstWebhook),
          Effect.map((updated) => updated ?? w),
          orUnavailable
        ),
      delete: (id) =>
        sql`DELETE FROM lm_webhooks WHERE id = ${id} RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), orUnavailable)
    })
  })
)
