/**
 * `lm releases …`: publish a release with its artifact and list releases (CONTRACT §9), against a running server.
 * `publish` streams the file as `multipart/form-data` (the fields, then the file) with a progress bar on stderr.
 */
import { stat } from "node:fs/promises"
import { createReadStream } from "node:fs"
import { basename } from "node:path"
import { randomUUID } from "node:crypto"
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer, Refused } from "./Server.js"
import { progressReporter, refusalOf, serverEndpoint, upload } from "./Transfer.js"

/** A file that cannot be read. */
const unreadable = (file: string, error: Error) => new Refused({ code: "file_unreadable", message: `cannot read ${file}: ${error.message}` })

const columns = ["id", "product_id", "version", "channel", "filename", "size", "released_at"]

const list = Command.make("list", {
  json,
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Only this product"), Flag.optional),
  channel: Flag.Literals("channel", Model.releaseChannels).pipe(Flag.withDescription("Only this channel"), Flag.optional),
  ...paging
}, ({ json: asJson, ...flags }) =>
  onServer((api) => api.releases.list({ query: given(flags) })).pipe(
    Effect.flatMap((r) => printList(asJson, "releases", r.data.releases, r.meta, columns))
  )).pipe(Command.withDescription("List releases"), Command.withAlias("ls"))

const publish = Command.make("publish", {
  json,
  file: Argument.String("file").pipe(Argument.withDescription("The artifact to upload")),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("The product")),
  version: Flag.String("version").pipe(Flag.withDescription("Strict semver, e.g. 1.4.0")),
  channel: Flag.Literals("channel", Model.releaseChannels).pipe(Flag.withDescription("Default stable"), Flag.optional),
  changelog: Flag.String("changelog").pipe(Flag.withDescription("Release notes"), Flag.optional),
  min_app_version: Flag.String("min-app-version").pipe(Flag.withDescription("Oldest client version that may install it"), Flag.optional)
}, ({ json: asJson, file, product_id, ...flags }) =>
  Effect.gen(function*() {
    const { authorization, url } = yield* serverEndpoint("/releases")
    const size = yield* Effect.tryPromise({
      try: () => stat(file).then((s) => s.size),
      catch: (error) => unreadable(file, error as Error)
    })
    const fields: Record<string, string> = { product_id: String(product_id) }
    for (const [k, v] of Object.entries(flags)) if (Option.isOption(v) && Option.isSome(v)) fields[k] = String(v.value)
    else if (typeof v === "string") fields[k] = v
    // multipart/form-data: the fields, then the file.
    const boundary = `lm-${randomUUID()}`
    const head = Object.entries(fields).map(([k, v]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`
    ).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${basename(file).replace(/"/g, "")}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n"
    const answer = yield* upload(url, authorization, {
      contentType: `multipart/form-data; boundary=${boundary}`,
      head,
      body: createReadStream(file),
      size,
      tail: `\r\n--${boundary}--\r\n`,
      progress: progressReporter(size),
      unreadable: (error) => unreadable(file, error)
    })
    if (answer.body?.success !== true) return yield* refusalOf(answer)
    yield* printOne(asJson, answer.body.data)
  })).pipe(Command.withDescription("Publish a release: upload its file with a progress bar on stderr"))

const remove = Command.make("delete", { json, id: Argument.Int("id").pipe(Argument.withDescription("The release's id")) }, ({ json: asJson, id }) =>
  onServer((api) => api.releases.delete({ params: { id }, payload: {} })).pipe(Effect.flatMap((r) => printOne(asJson, r.data)))).pipe(
    Command.withDescription("Delete a release and its stored file")
  )

export const releases = Command.make("releases").pipe(
  Command.withDescription("Releases on the server in LM_URL: publish (with a progress bar), list, delete"),
  Command.withSubcommands([publish, list, remove])
)

