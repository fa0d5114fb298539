/**
 * The `audit-log` route of the lm/v1 API (CONTRACT §18): every management write, refused ones included, newest
 * first, with filters. Management route: HTTP Basic API key (`read`).
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { Success } from "../wire/Envelope.js"
import { iso, ListMeta, PageQuery, positiveIntFromString, timeInput } from "../wire/Wire.js"

/** An entry of the audit log on the wire. */
export const AuditEntryWire = Schema.Struct({
  id: Schema.Int,
  at: Schema.String,
  actor: Schema.Struct({
    type: Model.AuditActorType,
    api_key_id: Schema.NullOr(Schema.Int),
    truncated_key: Schema.NullOr(Schema.String)
  }),
  ip: Schema.NullOr(Schema.String),
  action: Schema.String.annotate({ description: "`<target type>.<verb>`, e.g. `license.revoke`, `api_key.create`." }),
  target: Schema.Struct({ type: Schema.String, id: Schema.NullOr(Schema.String) }).annotate({
    description: "What the write was on: `license` (id: the license key), `machine`, `generator`, `api_key`, " +
      "`webhook`, `subscription`, `release`, `signing_key`, ... (id as the API names it; null when unknown)."
  }),
  request_id: Schema.NullOr(Schema.String),
  status: Schema.Int.annotate({ description: "The HTTP status the write was answered with (2xx done; else refused)." })
})
export type AuditEntryWire = typeof AuditEntryWire.Type

export const auditEntryToWire = (e: Model.AuditEntry): AuditEntryWire => ({
  id: e.id,
  at: iso(e.at),
  actor: { type: e.actor.type, api_key_id: e.actor.apiKeyId, truncated_key: e.actor.truncatedKey },
  ip: e.ip,
  action: e.action,
  target: { type: e.target.type, id: e.target.id },
  request_id: e.requestId,
  status: e.status
})

/** `actor`: an actor type, or an API key's id. */
const ActorFilter = Schema.Union([Model.AuditActorType, positiveIntFromString()]).annotate({
  description: "`api_key`, `cli`, `system`, or an API key's id (that key's writes)."
})

/** `target_id`: an id as the API names targets; any other shape is a malformed filter (400), not an empty list. */
const targetIdExpected = "must be a positive integer id, a license key (in upper case) or a signing key id"
const TargetIdFilter = Schema.String.annotate({
  description: "Exact target id: a positive integer id, a license key (upper case, as stored) or a signing key's kid."
}).check(Schema.makeFilter((s: string) => Model.isAuditTargetId(s) || targetIdExpected, { message: targetIdExpected }))

/** GET /audit-log query. */
export const AuditLogQuery = {
  actor: Schema.optionalKey(ActorFilter),
  action: Schema.optionalKey(Schema.String.annotate({ description: "Exact action, e.g. `license.revoke`." })),
  target_type: Schema.optionalKey(Schema.String.annotate({ description: "Exact target type, e.g. `license`." })),
  target_id: Schema.optionalKey(TargetIdFilter),
  from: Schema.optionalKey(timeInput("Entries at or after this ISO 8601 time (with an offset).")),
  to: Schema.optionalKey(timeInput("Entries strictly before this ISO 8601 time (with an offset).")),
  ...PageQuery
}

/** The audit log route. */
export class AuditLogGroup extends HttpApiGroup.make("audit-log")
  .add(
    HttpApiEndpoint.get("list", "/audit-log", {
      query: AuditLogQuery,
      success: Success(Schema.Struct({ entries: Schema.Array(AuditEntryWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List the audit log",
      description: "Every management write, refused ones included, newest first: the actor (`api_key` with its id " +
        "and truncated key, `cli` for `lm` commands run on the store, `system`), client IP, action, target, request " +
        "id and answered status. A done write's entry is written in the transaction of the change. Filters combine " +
        "with AND. Entries are kept for `LM_EVENT_RETENTION_DAYS`, like the event log. Paging as for every list."
    }))
  )
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Audit log", description: "The audit log (API key required)." }))
{}
