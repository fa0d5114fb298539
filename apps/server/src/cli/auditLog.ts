/** `lm audit-log`: the audit log (CONTRACT §18) with its filters, against a running server. */
import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { Wire } from "@lm/api"
import { given, json, paging, printList } from "./Output.js"
import { onServer } from "./Server.js"

const columns = ["id", "at", "actor", "ip", "action", "target", "status", "request_id"]

export const auditLog = Command.make("audit-log", {
  json,
  actor: Flag.String("actor").pipe(Flag.withDescription("api_key, cli, system, or an API key's id"), Flag.optional),
  action: Flag.String("action").pipe(Flag.withDescription("e.g. license.revoke"), Flag.optional),
  target_type: Flag.String("target-type").pipe(Flag.withDescription("e.g. license"), Flag.optional),
  target_id: Flag.String("target-id").pipe(Flag.withDescription("e.g. a license key"), Flag.optional),
  from: Flag.String("from").pipe(Flag.withDescription("At or after (ISO 8601)"), Flag.withSchema(Wire.TimeInput), Flag.optional),
  to: Flag.String("to").pipe(Flag.withDescription("Before (ISO 8601)"), Flag.withSchema(Wire.TimeInput), Flag.optional),
  ...paging
}, ({ json: asJson, actor, ...flags }) =>
  onServer((api) =>
    api["audit-log"].list({
      query: { ...given(flags), ...(actor._tag === "Some" ? { actor: /^\d+$/.test(actor.value) ? Number(actor.value) : actor.value as never } : {}) }
    })
  ).pipe(
    Effect.flatMap((r) =>
      asJson
        ? printList(true, "entries", r.data.entries, r.meta, columns)
        : printList(false, "entries", r.data.entries.map((e) => ({
          ...e,
          actor: e.actor.type === "api_key" ? `key ${e.actor.api_key_id} ${e.actor.truncated_key ?? ""}`.trim() : e.actor.type,
          target: e.target.id === null ? e.target.type : `${e.target.type} ${e.target.id}`
        })), r.meta, columns)
    )
  )).pipe(Command.withDescription("The audit log on the server in LM_URL, newest first, with filters"))
