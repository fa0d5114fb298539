/** `lm licenses …`: the license routes (CONTRACT §3) against a running server. */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { Wire } from "@lm/api"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer } from "./Server.js"

const key = Argument.String("key").pipe(Argument.withDescription("The license key"))

/** The settings a create or update may set (each left out unless given). */
const settings = {
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Product id"), Flag.optional),
  order_id: Flag.Int("order-id").pipe(Flag.withDescription("Order id"), Flag.optional),
  user_id: Flag.Int("user-id").pipe(Flag.withDescription("User id"), Flag.optional),
  max_activations: Flag.Int("max-activations").pipe(Flag.withDescription("Seat limit"), Flag.optional),
  valid_for_days: Flag.Int("valid-for-days").pipe(Flag.withDescription("Validity in days from first activation"), Flag.optional),
  expires_at: Flag.String("expires-at").pipe(
    Flag.withDescription("Expiry, ISO 8601 with an offset"),
    Flag.withSchema(Wire.TimeInput),
    Flag.optional
  ),
  grace_days: Flag.Int("grace-days").pipe(Flag.withDescription("Days valid after expiry"), Flag.optional),
  is_floating: Flag.Boolean("floating").pipe(Flag.withDescription("Floating seats (leases)"), Flag.optional)
}

/** The columns of a license table. */
const columns = ["id", "license_key", "status", "product_id", "activation_count", "max_activations", "expires_at"]

const create = Command.make("create", {
  json,
  license_key: Flag.String("license-key").pipe(Flag.withDescription("The key to issue (default: minted)"), Flag.optional),
  generator_id: Flag.Int("generator-id").pipe(Flag.withDescription("Draw from (or mint with) this generator"), Flag.optional),
  ...settings
}, ({ json: asJson, ...flags }) =>
  onServer((api) => api.licenses.create({ payload: given(flags) })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Create a license (status inactive until its first activation)")
  )

const list = Command.make("list", {
  json,
  status: Flag.Literals("status", Model.licenseStatuses).pipe(Flag.withDescription("Only this status"), Flag.optional),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Only this product"), Flag.optional),
  search: Flag.String("search").pipe(Flag.withDescription("Key prefix"), Flag.optional),
  ...paging
}, ({ json: asJson, ...flags }) =>
  onServer((api) => api.licenses.list({ query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "licenses", r.data.licenses, r.meta, columns))
  )).pipe(Command.withDescription("List licenses (newest first), with filters"), Command.withAlias("ls"))

const show = Command.make("show", { json, key }, ({ json: asJson, key }) =>
  onServer((api) => api.licenses.get({ params: { key } })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Show a license with its machines")
  )

const update = Command.make("update", { json, key, ...settings }, ({ json: asJson, key, ...flags }) =>
  onServer((api) => api.licenses.update({ params: { key }, payload: given(flags) })).pipe(
    Effect.flatMap((r) => printOne(asJson, r.data))
  )).pipe(Command.withDescription("Change a license's settings (only the flags given)"))

const renew = Command.make("renew", {
  json,
  key,
  days: Flag.Int("days").pipe(Flag.withDescription("Extend by this many days"), Flag.optional),
  expires_at: settings.expires_at
}, ({ json: asJson, key, ...flags }) =>
  onServer((api) => api.licenses.renew({ params: { key }, payload: given(flags) })).pipe(
    Effect.flatMap((r) => printOne(asJson, r.data))
  )).pipe(Command.withDescription("Renew a license (--days, --expires-at, or its valid-for-days from now)"))

/** An action on a license that takes no fields. */
const action = (name: "suspend" | "revoke" | "reinstate", description: string) =>
  Command.make(name, { json, key }, ({ json: asJson, key }) =>
    onServer((api) => api.licenses[name]({ params: { key }, payload: {} })).pipe(
      Effect.flatMap((r) => printOne(asJson, r.data))
    )).pipe(Command.withDescription(description))

const terminate = Command.make("terminate", {
  json,
  key,
  confirm: Flag.Boolean("confirm").pipe(Flag.withDescription("Required: terminating is irreversible"), Flag.withDefault(false))
}, ({ json: asJson, key, confirm }) =>
  onServer((api) => api.licenses.terminate({ params: { key }, payload: confirm ? { confirm } : {} })).pipe(
    Effect.flatMap((r) => printOne(asJson, r.data))
  )).pipe(Command.withDescription("Terminate a license for good (needs --confirm); its machines are deactivated"))

const remove = Command.make("delete", { json, key }, ({ json: asJson, key }) =>
  onServer((api) => api.licenses.delete({ params: { key }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Delete a license and its machines")
  )

export const licenses = Command.make("licenses").pipe(
  Command.withDescription("Licenses on the server in LM_URL: create, list, show, update, renew, suspend, revoke, reinstate, terminate, delete"),
  Command.withSubcommands([
    create,
    list,
    show,
    update,
    renew,
    action("suspend", "Suspend a license (machines are kept)"),
    action("revoke", "Revoke a license (reversible with reinstate)"),
    action("reinstate", "Reinstate a suspended or revoked license"),
    terminate,
    remove
  ])
)
