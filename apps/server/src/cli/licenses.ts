/**
 * `lm licenses …`: the license routes (CONTRACT §3) against a running server, and the moves of licenses in bulk
 * (§17): `import` uploads another system's export in one all-or-nothing request, `export` streams every license
 * matching the filters to a file or stdout; both with progress on stderr.
 */
import { createWriteStream } from "node:fs"
import { readFile, rm } from "node:fs/promises"
import { Readable, type Writable } from "node:stream"
import { finished } from "node:stream/promises"
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Importing, Model } from "@lm/domain/core"
import { Wire } from "@lm/api"
import { given, json, paging, printList, printOne } from "./Output.js"
import { onServer, Refused } from "./Server.js"
import { download, progressReporter, refusalOf, serverEndpoint, upload } from "./Transfer.js"

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

/**
 * What an import file holds, as the body's `data`: for `csv` its text; otherwise a JSON array of licenses, or
 * NDJSON (one license a line, as `lm licenses export` writes), read into an array.
 */
const importData = (format: Importing.ImportFormat, file: string, text: string): Effect.Effect<unknown, Refused> =>
  Effect.suspend(() => {
    if (format === "csv") return Effect.succeed(text)
    try {
      return Effect.succeed(JSON.parse(text))
    } catch {
      // Not one JSON document: NDJSON, one license a line.
    }
    const rows: Array<unknown> = []
    const lines = text.split("\n")
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]!.trim() === "") continue
      try {
        rows.push(JSON.parse(lines[i]!))
      } catch {
        return Effect.fail(new Refused({ code: "invalid_file", message: `${file} is neither JSON nor NDJSON (line ${i + 1} is not JSON)` }))
      }
    }
    return Effect.succeed(rows)
  })

const importLicenses = Command.make("import", {
  json,
  file: Argument.String("file").pipe(Argument.withDescription("The export to import: JSON or NDJSON licenses, or CSV text")),
  format: Flag.Literals("format", Importing.importFormats).pipe(
    Flag.withDescription("lm (this API's licenses), wplm, lmfwc (License Manager for WooCommerce), dlm (Digital License Manager), csv")
  )
}, ({ json: asJson, file, format }) =>
  Effect.gen(function*() {
    const { authorization, url } = yield* serverEndpoint("/licenses/import")
    const text = yield* Effect.tryPromise({
      try: () => readFile(file, "utf8"),
      catch: (error) => new Refused({ code: "file_unreadable", message: `cannot read ${file}: ${(error as Error).message}` })
    })
    const body = Buffer.from(JSON.stringify(yield* importData(format, file, text)))
    const answer = yield* upload(url, authorization, {
      contentType: "application/json",
      head: `{"format":${JSON.stringify(format)},"data":`,
      body: Readable.from(chunksOf(body)),
      size: body.length,
      tail: "}",
      progress: progressReporter(body.length),
      unreadable: (error) => new Refused({ code: "file_unreadable", message: `cannot read ${file}: ${error.message}` })
    })
    if (answer.body?.success !== true) return yield* refusalOf(answer)
    yield* printOne(asJson, answer.body.data)
  })).pipe(Command.withDescription(
    "Import licenses exported by another system (up to 10,000, all or nothing), with upload progress on stderr"
  ))

/** A buffer in 64 KiB pieces, so that progress moves as it is sent. */
function* chunksOf(buffer: Buffer) {
  for (let at = 0; at < buffer.length; at += 65_536) yield buffer.subarray(at, at + 65_536)
}

/** The filters of GET /licenses/export (those of the list, without paging or order). */
const exportFilters = {
  status: Flag.Literals("status", Model.licenseStatuses).pipe(Flag.withDescription("Only this status"), Flag.optional),
  product_id: Flag.Int("product-id").pipe(Flag.withDescription("Only this product"), Flag.optional),
  search: Flag.String("search").pipe(Flag.withDescription("Key prefix"), Flag.optional)
}

const exportLicenses = Command.make("export", {
  json,
  format: Flag.Literals("format", Importing.exportFormats).pipe(
    Flag.withDescription("ndjson (one license a line; the default) or csv (imports back with --format csv)"),
    Flag.optional
  ),
  out: Flag.String("out").pipe(Flag.withDescription("Write to this file (default: stdout)"), Flag.optional),
  ...exportFilters
}, ({ format, json: asJson, out, ...filters }) =>
  Effect.gen(function*() {
    const chosen = Option.getOrElse(format, () => Importing.exportFormats[0])
    // The count first (one list call), so that progress can say how far along the export is.
    const expected = yield* onServer((api) => api.licenses.list({ query: { ...given(filters), per_page: 1 } }))
    const query = new URLSearchParams({ format: chosen })
    for (const [name, value] of Object.entries(given(filters))) query.set(name, String(value))
    const { authorization, url } = yield* serverEndpoint(`/licenses/export?${query}`)
    const report = progressReporter(expected.meta.total, String, " licenses")
    // Every line is a license, but a CSV's first one (its header).
    let lines = chosen === "csv" ? -1 : 0
    const file = Option.getOrUndefined(out)
    const sink: Writable = file === undefined ? process.stdout : createWriteStream(file)
    report(0)
    const written = yield* download(url, authorization, sink, (piece) => {
      for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++
      report(Math.max(0, lines), false)
    }).pipe(
      Effect.andThen((n) =>
        file === undefined ? Effect.succeed(n) : Effect.as(
          Effect.tryPromise({
            try: () => (sink.end(), finished(sink)),
            catch: (error) => new Refused({ code: "output_unwritable", message: `cannot write the export: ${(error as Error).message}` })
          }),
          n
        )
      ),
      // A partial file is removed, so that a script never takes it for the whole export.
      Effect.tapError(() => file === undefined ? Effect.void : Effect.promise(() => (sink.destroy(), rm(file, { force: true }))))
    )
    const exported = Math.max(0, lines)
    report(exported, true)
    if (file !== undefined) yield* printOne(asJson, { exported, format: chosen, out: file, bytes: written })
  })).pipe(Command.withDescription(
    "Export every license matching the filters (oldest first) to --out or stdout, with progress on stderr; " +
      "--json prints the summary after --out as JSON"
  ))

export const licenses = Command.make("licenses").pipe(
  Command.withDescription(
    "Licenses on the server in LM_URL: create, list, show, update, renew, suspend, revoke, reinstate, terminate, delete, import, export"
  ),
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
    remove,
    importLicenses,
    exportLicenses
  ])
)
