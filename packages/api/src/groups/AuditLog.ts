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
import { ListMeta, PageQuery, positiveIntFromString, timeInput, wireRecord } from "../wire/Wire.js"

/** The actor of an entry on the wire. */
const AuditActorWire = wireRecord(Model.AuditActor)

/** The target of an entry on the wire. */
const AuditTargetWire = wireRecord(Model.AuditTarget)

/** An entry of the audit log on the wire. */
export const AuditEntryWire = wireRecord(Model.AuditEntry, {
  supplied: {
    actor: AuditActorWire,
    target: AuditTargetWire.annotate({
      description: "What the write was on: `license` (id: the license key), `machine`, `generator`, `api_key`, " +
        "`webhook`, `subscription`, `release`, `signing_key`, ... (id as the API names it; null when unknown)."
    })
  },
  describe: {
    action: "`<target type>.<verb>`, e.g. `license.revoke`, `api_key.create`.",
    status: "The HTTP status the write was answered with (2xx done; else refused)."
  }
})
export type AuditEntryWire = typeof AuditEntryWire.Type

export const auditEntryToWire = (e: Model.AuditEntry): AuditEntryWire =>
  AuditEntryWire.from(e, { actor: AuditActorWire.from(e.actor), target: AuditTargetWire.from(e.target) })

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
