/** The domain's `AuditLogRepository` on `lm_audit_log`; an append joins the caller's transaction. */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { Count, date, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** A row of `lm_audit_log`. */
const AuditRow = Schema.Struct({
  id: Int8,
  at: Timestamp,
  actor_type: Model.AuditActorType,
  api_key_id: Schema.NullOr(Int8),
  truncated_key: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  action: Schema.String,
  target_type: Schema.String,
  target_id: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  status: Schema.Int
})

const entryOf = (row: typeof AuditRow.Type): Model.AuditEntry => ({
  id: row.id,
  at: row.at,
  actor: { type: row.actor_type, apiKeyId: row.api_key_id, truncatedKey: row.truncated_key },
  ip: row.ip,
  action: row.action,
  target: { type: row.target_type, id: row.target_id },
  requestId: row.request_id,
  status: row.status
})

const auditRows = rowsOf(AuditRow, "lm_audit_log")
const oneAuditRow = oneOf(AuditRow, "lm_audit_log")
const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.AuditLogRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient

    /** The filter as one condition (each given field must match; see `Model.auditMatches`). */
    const whereOf = (f: Model.AuditFilter) => {
      const where = [
        f.actor === undefined
          ? undefined
          : typeof f.actor === "number"
          ? sql`api_key_id = ${f.actor}`
          : sql`actor_type = ${f.actor}`,
        f.action !== undefined ? sql`action = ${f.action}` : undefined,
        f.targetType !== undefined ? sql`target_type = ${f.targetType}` : undefined,
        f.targetId !== undefined ? sql`target_id = ${f.targetId}` : undefined,
        f.from !== undefined ? sql`at >= ${date(f.from)}` : undefined,
        f.to !== undefined ? sql`at < ${date(f.to)}` : undefined
      ].filter((c) => c !== undefined)
      return where.length === 0 ? sql`TRUE` : sql.and(where)
    }

    return Ports.AuditLogRepository.of({
      append: (d) =>
        sql`INSERT INTO lm_audit_log ${
          sql.insert({
            at: date(d.at),
            actor_type: d.actor.type,
            api_key_id: d.actor.apiKeyId,
            truncated_key: d.actor.truncatedKey,
            ip: d.ip,
            action: d.action,
            target_type: d.target.type,
            target_id: d.target.id,
            request_id: d.requestId,
            status: d.status
          })
        } RETURNING *`.pipe(Effect.flatMap(oneAuditRow), Effect.map(entryOf), orUnavailable),
      list: (filter, page) => {
        const where = whereOf(filter)
        return Effect.all({
          items: sql`SELECT * FROM lm_audit_log WHERE ${where} ORDER BY id DESC LIMIT ${page.perPage} OFFSET ${
            (page.page - 1) * page.perPage
          }`.pipe(Effect.flatMap(auditRows), Effect.map((rows) => rows.map(entryOf))),
          total: sql`SELECT count(*) AS n FROM lm_audit_log WHERE ${where}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      },
      prune: (olderThan, limit) =>
        limit < 1
          ? Effect.succeed(0)
          : sql`
            WITH gone AS (
              DELETE FROM lm_audit_log WHERE id IN (
                SELECT id FROM lm_audit_log WHERE at < ${date(olderThan)} ORDER BY at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
              )
              RETURNING 1
            )
            SELECT count(*) AS n FROM gone`.pipe(Effect.flatMap(count), Effect.map((r) => r.n), orUnavailable)
    })
  })
)
