/** The domain's `AuditLogRepository` on `lm_audit_log`; an append joins the caller's transaction. */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, date, oneOf, rowsOf, tableOf } from "./rows.js"

/** A row of `lm_audit_log`: the actor and the target in columns of their own. */
const auditLog = tableOf(Model.AuditEntry, {
  generated: ["id"],
  embedded: { actor: { apiKeyId: "api_key_id", truncatedKey: "truncated_key" }, target: {} }
})
const AuditRow = auditLog.Row

const auditRows = rowsOf(AuditRow, "lm_audit_log")
const oneAuditRow = oneOf(AuditRow, "lm_audit_log")
const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.AuditLogRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

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
          sql.insert(auditLog.columns(d))
        } RETURNING *`.pipe(Effect.flatMap(oneAuditRow), orUnavailable),
      list: (filter, page) => {
        const where = whereOf(filter)
        return Effect.all({
          items: sql`SELECT * FROM lm_audit_log WHERE ${where} ORDER BY id DESC LIMIT ${page.perPage} OFFSET ${
            (page.page - 1) * page.perPage
          }`.pipe(Effect.flatMap(auditRows)),
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
