/** `lm generators …`: key generators and their pools (CONTRACT §8) against a running server. */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { given, json, paging, printList, table } from "./Output.js"
import { namedRecordCommands } from "./Records.js"
import { onServer } from "./Server.js"

const id = Argument.Int("id").pipe(Argument.withDescription("The generator's id"))
const columns = ["id", "name", "product_id", "prefix", "chunk_length", "pool_size", "created_at"]

/** The fields create and update may set (each left out unless given). */
const fields = {
  charset: Flag.String("charset").pipe(Flag.withDescription("Key alphabet"), Flag.optional),
  chunk_length: Flag.Int("chunk-length").pipe(Flag.withDescription("Characters per group"), Flag.optional),
  prefix: Flag.String("prefix").pipe(Flag.withDescription("Prefix of the first group"), Flag.optional),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Product of its licenses"), Flag.optional),
  default_max_activations: Flag.Int("max-activations").pipe(Flag.withDescription("Seat limit of its licenses"), Flag.optional),
  default_valid_days: Flag.Int("valid-days").pipe(Flag.withDescription("Validity of its licenses in days"), Flag.optional)
}

const list = Command.make("list", { json, ...paging }, ({ json: asJson, ...flags }) =>
  onServer((api) => api.generators.list({ query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "generators", r.data.generators, r.meta, columns))
  )).pipe(Command.withDescription("List generators"), Command.withAlias("ls"))

const { create, remove, show, update } = namedRecordCommands({
  noun: "generator",
  id,
  fields,
  create: (api, payload) => api.generators.create({ payload }),
  get: (api, id) => api.generators.get({ params: { id } }),
  update: (api, id, payload) => api.generators.update({ params: { id }, payload }),
  delete: (api, id) => api.generators.delete({ params: { id }, payload: {} }),
  updateDescription: "Change a generator (only the flags given)",
  deleteDescription: "Delete a generator"
})

const generate = Command.make("generate", {
  json,
  id,
  count: Flag.Int("count").pipe(Flag.withDescription("How many keys to make (1-10000)"))
}, ({ json: asJson, id, count }) =>
  onServer((api) => api.generators.generate({ params: { id }, payload: { count } })).pipe(
    Effect.flatMap((r) =>
      Console.log(
        asJson
          ? JSON.stringify({ ...r.data, meta: r.meta }, null, 2)
          : `${table(r.data.licenses, ["id", "license_key", "status"])}\n${r.meta.total} keys generated`
      )
    )
  )).pipe(Command.withDescription("Mint keys into the generator's pool (pending licenses)"))

export const generators = Command.make("generators").pipe(
  Command.withDescription("Key generators on the server in LM_URL: list, create, show, update, delete, generate"),
  Command.withSubcommands([list, create, show, update, remove, generate])
)
