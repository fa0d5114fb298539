/**
 * The audit log's records (CONTRACT §18): who made which management write, from where, on what, and how it
 * ended. Entries are kept like the event log (`LM_EVENT_RETENTION_DAYS`).
 */
import { Schema } from "effect"
import { isStoredKeyFormat } from "../licensing/keys.js"
import { Id, Millis } from "../shared/model.js"
import { isKidFormat } from "../signing/model.js"

/** Who made a write: an API key over HTTP, the `lm` command line on the store, or the service itself. */
export const auditActorTypes = ["api_key", "cli", "system"] as const
export const AuditActorType = Schema.Literals(auditActorTypes)
export type AuditActorType = typeof AuditActorType.Type

/** The actor of an entry; `apiKeyId` and `truncatedKey` only for `api_key`. */
export const AuditActor = Schema.Struct({
  type: AuditActorType,
  apiKeyId: Schema.NullOr(Id),
  truncatedKey: Schema.NullOr(Schema.String)
})
export type AuditActor = typeof AuditActor.Type

/** What a write was made on: a resource type (`license`, `api_key`, ...) and its id as the API names it, when known. */
export const AuditTarget = Schema.Struct({ type: Schema.String, id: Schema.NullOr(Schema.String) })
export type AuditTarget = typeof AuditTarget.Type

/**
 * Whether a text is the id of a target as the API names it: a positive integer id (`42`), a license key as
 * stored (upper-case, 2–8 groups), or a signing key's kid (16 lower-case hex). A `target_id` filter of any other
 * shape can match no done write, so it is refused as malformed rather than answered with an empty list.
 */
export const isAuditTargetId = (text: string): boolean =>
  (/^[1-9][0-9]{0,15}$/.test(text) && Number(text) <= Number.MAX_SAFE_INTEGER) || isStoredKeyFormat(text) ||
  isKidFormat(text)

/** An entry of the audit log. `status` is the HTTP status the write was answered with (2xx done, else refused). */
export const AuditEntry = Schema.Struct({
  id: Id,
  at: Millis,
  actor: AuditActor,
  ip: Schema.NullOr(Schema.String),
  /** `<target type>.<verb>`, e.g. `license.revoke`, `api_key.create`. */
  action: Schema.String,
  target: AuditTarget,
  requestId: Schema.NullOr(Schema.String),
  status: Schema.Int
})
export type AuditEntry = typeof AuditEntry.Type
export type AuditDraft = Omit<AuditEntry, "id">

/** The filters of a list of entries; each given one must match (`from` inclusive, `to` exclusive). */
export interface AuditFilter {
  /** `api_key`, `cli`, `system`, or an API key id. */
  readonly actor?: AuditActorType | number | undefined
  readonly action?: string | undefined
  readonly targetType?: string | undefined
  readonly targetId?: string | undefined
  readonly from?: number | undefined
  readonly to?: number | undefined
}

/** Whether an entry passes a filter: the one definition of the filters, which the memory store applies as is. */
export const auditMatches = (filter: AuditFilter) => (entry: AuditEntry): boolean =>
  (filter.actor === undefined ||
    (typeof filter.actor === "number" ? entry.actor.apiKeyId === filter.actor : entry.actor.type === filter.actor)) &&
  (filter.action === undefined || entry.action === filter.action) &&
  (filter.targetType === undefined || entry.target.type === filter.targetType) &&
  (filter.targetId === undefined || entry.target.id === filter.targetId) &&
  (filter.from === undefined || entry.at >= filter.from) &&
  (filter.to === undefined || entry.at < filter.to)
