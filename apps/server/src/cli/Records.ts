/**
 * The commands a named record on the server has (generators, policies): `create` with `--name` and the record's
 * fields, `show`, `update` (only the flags given) and `delete`, by the record's id, each printing the answer.
 */
import { Effect, type Option } from "effect"
import { type Argument, Command, Flag } from "effect/cli"
import type { LmApiClient } from "@lm/api"
import { given, json, printOne } from "./Output.js"
import { onServer } from "./Server.js"

/** What a record's call answers: the envelope's `data`, printed as one record. */
interface Answer {
  readonly data: Record<string, unknown>
}

/** The optional flags `F` as payload fields, each left out unless given. */
type Given<F> = { -readonly [K in keyof F]?: F[K] extends Flag.Flag<Option.Option<infer V>> ? V : never }

/** Runs `call` on the server in `LM_URL` and prints its answer: `key: value` lines, or JSON with `--json`. */
export const printAnswer = <E>(asJson: boolean, call: (api: LmApiClient) => Effect.Effect<Answer, E>) =>
  onServer(call).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))

/** create, show, update and delete of `noun` records by `id`, with the optional `fields` create and update may set. */
export const namedRecordCommands = <F extends Record<string, Flag.Flag<Option.Option<any>>>, E>(spec: {
  readonly noun: string
  readonly id: Argument.Argument<number>
  readonly fields: F
  readonly create: (api: LmApiClient, payload: { readonly name: string } & Given<F>) => Effect.Effect<Answer, E>
  readonly get: (api: LmApiClient, id: number) => Effect.Effect<Answer, E>
  readonly update: (api: LmApiClient, id: number, payload: { readonly name?: string } & Given<F>) => Effect.Effect<Answer, E>
  readonly delete: (api: LmApiClient, id: number) => Effect.Effect<Answer, E>
  /** The help of update and delete. */
  readonly updateDescription: string
  readonly deleteDescription: string
}) => {
  const { fields, id, noun } = spec
  // The fields' flags are a nested group of the command's config: `given` keeps the ones the user set.
  const fieldsGiven = (flags: unknown) => given(flags as Record<string, Option.Option<unknown>>) as Given<F>
  const name = Flag.String("name").pipe(Flag.withDescription("Its name"))
  const create = Command.make("create", { json, name, fields }, (flags) =>
    printAnswer(flags.json, (api) => spec.create(api, { name: flags.name, ...fieldsGiven(flags.fields) }))).pipe(
      Command.withDescription(`Create a ${noun}`)
    )
  const show = Command.make("show", { json, id }, (flags) => printAnswer(flags.json, (api) => spec.get(api, flags.id))).pipe(
    Command.withDescription(`Show a ${noun}`)
  )
  const update = Command.make("update", { json, id, name: name.pipe(Flag.optional), fields }, (flags) =>
    printAnswer(flags.json, (api) => spec.update(api, flags.id, { ...given({ name: flags.name }), ...fieldsGiven(flags.fields) }))).pipe(
      Command.withDescription(spec.updateDescription)
    )
  const remove = Command.make("delete", { json, id }, (flags) => printAnswer(flags.json, (api) => spec.delete(api, flags.id))).pipe(
    Command.withDescription(spec.deleteDescription)
  )
  return { create, show, update, remove }
}
