/** Handler of the `audit-log` group: one read of the domain's `AuditLog`, written with `auditEntryToWire`. */
import { Effect } from "effect"
import { AuditLog } from "@lm/domain"
import { Api, auditEntryToWire, ok } from "@lm/api"
import { listMeta, pageRequest } from "@lm/api/wire"
import { group } from "./Group.js"

/** The `audit-log` handler. */
export const AuditLogHandlers = group(Api, "audit-log", (handlers) =>
  Effect.gen(function*() {
    const auditLog = yield* AuditLog
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return auditLog.list({
          actor: query.actor,
          action: query.action,
          targetType: query.target_type,
          targetId: query.target_id,
          from: query.from,
          to: query.to
        }, page).pipe(
          Effect.map((result) => ok({ entries: result.items.map(auditEntryToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      }
    })
  }))
