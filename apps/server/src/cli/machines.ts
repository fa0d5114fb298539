/** `lm machines …`: a license's machines (CONTRACT §6) against a running server. */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer } from "./Server.js"

const id = Argument.Int("id").pipe(Argument.withDescription("The machine's id"))
const columns = ["id", "fingerprint", "status", "name", "platform", "app_version", "last_seen_at"]

const list = Command.make("list", {
  json,
  key: Argument.String("key").pipe(Argument.withDescription("The license key")),
  status: Flag.Literals("status", Model.machineStatuses).pipe(Flag.withDescription("Only this status"), Flag.optional),
  ...paging
}, ({ json: asJson, key, ...flags }) =>
  onServer((api) => api.machines.listForLicense({ params: { key }, query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "machines", r.data.machines, r.meta, columns))
  )).pipe(Command.withDescription("List a license's machines"), Command.withAlias("ls"))

const show = Command.make("show", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.machines.get({ params: { id } })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Show a machine")
  )

const deactivate = Command.make("deactivate", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.machines.deactivate({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Deactivate a machine (frees its seat)")
  )

const revoke = Command.make("revoke", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.machines.revoke({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Revoke a machine (it cannot activate again)")
  )

export const machines = Command.make("machines").pipe(
  Command.withDescription("Machines on the server in LM_URL: list, show, deactivate, revoke"),
  Command.withSubcommands([list, show, deactivate, revoke])
)
