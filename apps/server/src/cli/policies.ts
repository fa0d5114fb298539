/** `lm policies …`: policies and their entitlements (CONTRACT §15) against a running server. */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { given, json, paging, printList } from "./Output.js"
import { namedRecordCommands, printAnswer } from "./Records.js"
import { onServer } from "./Server.js"

const id = Argument.Int("id").pipe(Argument.withDescription("The policy's id"))
const columns = ["id", "name", "product_id", "entitlements", "max_activations", "valid_for_days", "created_at"]

/** The settings create and update may set (each left out unless given). */
const fields = {
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Its product"), Flag.optional),
  entitlements: Flag.String("entitlements").pipe(
    Flag.withDescription("Comma-separated entitlement codes its licenses hold"),
    Flag.map((text) => text.split(",").map((e) => e.trim()).filter((e) => e !== "")),
    Flag.optional
  ),
  max_activations: Flag.Int("max-activations").pipe(Flag.withDescription("Seat limit"), Flag.optional),
  valid_for_days: Flag.Int("valid-for-days").pipe(Flag.withDescription("Validity in days from first activation"), Flag.optional),
  grace_days: Flag.Int("grace-days").pipe(Flag.withDescription("Days valid after expiry"), Flag.optional)
}

const list = Command.make("list", {
  json,
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Only this product"), Flag.optional),
  ...paging
}, ({ json: asJson, ...flags }) =>
  onServer((api) => api.policies.list({ query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "policies", r.data.policies, r.meta, columns))
  )).pipe(Command.withDescription("List policies"), Command.withAlias("ls"))

const { create, remove, show, update } = namedRecordCommands({
  noun: "policy",
  id,
  fields,
  create: (api, payload) => api.policies.create({ payload }),
  get: (api, id) => api.policies.get({ params: { id } }),
  update: (api, id, payload) => api.policies.update({ params: { id }, payload }),
  delete: (api, id) => api.policies.delete({ params: { id }, payload: {} }),
  updateDescription: "Change a policy (only the flags given; entitlements hold for its licenses at once)",
  deleteDescription: "Delete a policy (refused while a license refers to it)"
})

const apply = Command.make("apply", { json, id }, ({ json: asJson, id }) =>
  printAnswer(asJson, (api) => api.policies.apply({ params: { id }, payload: {} }))).pipe(
    Command.withDescription("Copy a policy's settings into its licenses")
  )

export const policies = Command.make("policies").pipe(
  Command.withDescription("Policies on the server in LM_URL: list, create, show, update, delete, apply"),
  Command.withSubcommands([list, create, show, update, remove, apply])
)
