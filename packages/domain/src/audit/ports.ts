/** What the audit log needs from a store. */
import { Context } from "effect"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { AuditDraft, AuditEntry, AuditFilter } from "./model.js"

/**
 * The audit log. `append` inside `Store.transaction` commits or rolls back with the transaction; outside one it is
 * a write of its own. `list` answers the matches newest first (by id).
 */
export class AuditLogRepository extends Context.Service<AuditLogRepository, {
  readonly append: (draft: AuditDraft) => Op<AuditEntry>
  readonly list: (filter: AuditFilter, page: PageRequest) => Op<Page<AuditEntry>>
  /**
   * Deletes at most `limit` entries whose time is before `olderThan` (epoch ms), oldest first; returns how many
   * (fewer than `limit`: none older are left). Retention calls it outside transactions.
   */
  readonly prune: (olderThan: number, limit: number) => Op<number>
}>()("@lm/domain/AuditLogRepository") {}
