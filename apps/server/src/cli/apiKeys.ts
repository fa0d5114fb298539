/**
 * `lm api-keys …` (CONTRACT §11, §13): against the server in `LM_URL` when it is set (create, list, delete), else
 * on the store (create and list: the first key of a new installation).
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { ApiKeys, Model, Services } from "@lm/domain"
import { Wire } from "@lm/api"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer, serverGiven } from "./Server.js"
import { auditCli, withEngine } from "./Store.js"

const columns = ["id", "scope", "truncated_key", "description", "created_at", "last_access_at"]

const create = Command.make("create", {
  json,
  scope: Flag.Literals("scope", Model.apiKeyScopes).pipe(Flag.withDescription("What the key may do"), Flag.withDefault("read_write" as const)),
  description: Flag.String("description").pipe(Flag.withDescription("What the key is for"), Flag.withDefault(""))
}, ({ json: asJson, scope, description }) =>
  Effect.flatMap(serverGiven, (remote) =>
    remote
      ? onServer((api) => api["api-keys"].create({ payload: { scope, description } })).pipe(
        Effect.flatMap((r) => printOne(asJson, r.data))
      )
      : withEngine(Effect.gen(function*() {
        const issued = yield* (yield* ApiKeys).create(Services.ApiKeyActor.operator, { description, scope })
        yield* auditCli("api_key.create", { type: "api_key", id: String(issued.apiKey.id) }, 201)
        if (asJson) {
          return yield* printOne(true, {
            id: issued.apiKey.id,
            description,
            scope,
            consumer_key: issued.consumerKey,
            consumer_secret: issued.consumerSecret,
            truncated_key: issued.apiKey.truncatedKey
          })
        }
        yield* Console.log(`api key created: id=${issued.apiKey.id} scope=${scope}`)
        yield* Console.log(`consumer_key=${issued.consumerKey}`)
        yield* Console.log(`consumer_secret=${issued.consumerSecret}`)
        yield* Console.log("The secret is shown only now; store it safely.")
      }))
  )).pipe(Command.withDescription("Issue an API key; the secret is shown only now (on the store when LM_URL is unset)"))

const list = Command.make("list", { json, ...paging }, ({ json: asJson, ...flags }) =>
  Effect.flatMap(serverGiven, (remote) =>
    remote
      ? onServer((api) => api["api-keys"].list({ query: given(flags) })).pipe(
        Effect.flatMap((r) => printList(asJson, "api_keys", r.data.api_keys, r.meta, columns))
      )
      : withEngine(Effect.gen(function*() {
        const page = Wire.pageRequest({ page: Option.getOrUndefined(flags.page), per_page: Option.getOrUndefined(flags.per_page) })
        const found = yield* (yield* ApiKeys).list(Services.ApiKeyActor.operator, page)
        yield* printList(asJson, "api_keys", found.items.map(Wire.apiKeyToWire), Wire.listMeta(found.total, page.page, page.perPage), columns)
      }))
  )).pipe(Command.withDescription("List API keys, without secrets"), Command.withAlias("ls"))

const remove = Command.make("delete", { json, id: Argument.Int("id").pipe(Argument.withDescription("The key's id")) }, ({ json: asJson, id }) =>
  onServer((api) => api["api-keys"].delete({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Revoke an API key (on the server in LM_URL)")
  )

export const apiKeys = Command.make("api-keys").pipe(
  Command.withDescription("API keys: on the server in LM_URL, or on the store when it is unset"),
  Command.withSubcommands([create, list, remove])
)
