/** The audit log in the engine: `AuditLog`, and its retention (the event log's window) in the background. */
import { Layer } from "effect"
import type { ActivityOptions } from "../activity/feature.js"
import { defaultEventRetentionDays } from "../activity/feature.js"
import { layerPruning, pruneLog } from "../activity/EventRetention.js"
import { Effect } from "effect"
import { AuditLog } from "./AuditLog.js"
import { AuditLogRepository } from "./ports.js"

/** `AuditLog`, and (unless `eventRetentionDays` is 0) the deletion of entries older than that many days. */
export const feature = (options: Pick<ActivityOptions, "eventRetentionDays">) => {
  const days = options.eventRetentionDays ?? defaultEventRetentionDays
  return {
    services: AuditLog.layer,
    background: days > 0
      ? layerPruning("audit log", Effect.flatMap(AuditLogRepository, (log) => pruneLog(log.prune, { days })), { days })
      : Layer.empty
  }
}
