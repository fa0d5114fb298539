/** The domain's `WebhookRepository` on `lm_webhooks` (a webhook's deliveries go with it: ON DELETE CASCADE). */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, date, firstOf, oneOf, rowsOf, tableOf } from "./rows.js"

/** `lm_webhooks`: the sealed secret in `secret`, the events a JSON array. */
const webhooks = tableOf(Model.Webhook, { generated: ["id"], columns: { sealedSecret: "secret" } })
const WebhookRow = webhooks.Row

const webhookRows = rowsOf(WebhookRow, "lm_webhooks")
const firstWebhook = firstOf(WebhookRow, "lm_webhooks")
const oneWebhook = oneOf(WebhookRow, "lm_webhooks")

const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.WebhookRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    const webhookColumns = (w: Model.WebhookDraft) => webhooks.columns(w, date, (events) => sql.json(events))

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
