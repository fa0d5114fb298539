/** `lm webhooks …`: webhooks, their deliveries and redelivery (CONTRACT §11) against a running server. */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer } from "./Server.js"

const id = Argument.Int("id").pipe(Argument.withDescription("The webhook's id"))
const columns = ["id", "name", "url", "events", "status", "created_at"]
const deliveryColumns = ["id", "event_id", "type", "status", "attempts", "response_status", "last_attempt_at", "next_attempt_at"]

/** `--events a,b` as a list. */
const events = Flag.String("events").pipe(
  Flag.withDescription(`Comma-separated event names, or * for all (${Model.webhookEventTypes.length} names; see the README)`),
  Flag.map((text) => text.split(",").map((e) => e.trim()).filter((e) => e !== ""))
)

const list = Command.make("list", { json, ...paging }, ({ json: asJson, ...flags }) =>
  onServer((api) => api.webhooks.list({ query: given(flags) } as never)).pipe(
    Effect.flatMap((r: any) => printList(asJson, "webhooks", r.data.webhooks, r.meta, columns))
  )).pipe(Command.withDescription("List webhooks"), Command.withAlias("ls"))

const create = Command.make("create", {
  json,
  url: Flag.String("url").pipe(Flag.withDescription("Where deliveries are POSTed (https)")),
  events,
  name: Flag.String("name").pipe(Flag.withDescription("A name for people"), Flag.optional)
}, ({ json: asJson, url, events, ...flags }) =>
  onServer((api) => api.webhooks.create({ payload: { url, events, ...given(flags) } })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Register a webhook; its signing secret is shown only now")
  )

const update = Command.make("update", {
  json,
  id,
  url: Flag.String("url").pipe(Flag.withDescription("New URL"), Flag.optional),
  events: events.pipe(Flag.optional),
  name: Flag.String("name").pipe(Flag.withDescription("New name"), Flag.optional),
  status: Flag.Literals("status", Model.webhookStatuses).pipe(Flag.withDescription("active re-enables a disabled webhook"), Flag.optional)
}, ({ json: asJson, id, ...flags }) =>
  onServer((api) => api.webhooks.update({ params: { id }, payload: given(flags) })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Change a webhook (only the flags given)")
  )

const remove = Command.make("delete", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.webhooks.delete({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Delete a webhook")
  )

const ping = Command.make("ping", { json, id }, ({ json: asJson, id }) =>
  onServer((api) => api.webhooks.ping({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Deliver webhook.ping now and show the outcome")
  )

const deliveries = Command.make("deliveries", { json, id, ...paging }, ({ json: asJson, id, ...flags }) =>
  onServer((api) => api.webhooks.deliveries({ params: { id }, query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "deliveries", r.data.deliveries, r.meta, deliveryColumns))
  )).pipe(Command.withDescription("A webhook's deliveries, newest first"))

const redeliver = Command.make("redeliver", {
  json,
  id,
  delivery: Argument.Int("delivery-id").pipe(Argument.withDescription("The delivery's id"))
}, ({ json: asJson, id, delivery }) =>
  onServer((api) => api.webhooks.redeliver({ params: { id, delivery_id: delivery }, payload: {} })).pipe(
    Effect.flatMap((r) => printOne(asJson, r.data))
  )).pipe(Command.withDescription("Queue one more attempt of a delivery now"))

export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks on the server in LM_URL: list, create, update, delete, ping, deliveries, redeliver"),
  Command.withSubcommands([list, create, update, remove, ping, deliveries, redeliver])
)
