/**
 * `lm releases …`: publish a release with its artifact and list releases (CONTRACT §9), against a running server.
 * `publish` streams the file as `multipart/form-data` (the fields, then the file) with a progress bar on stderr.
 */
import { stat } from "node:fs/promises"
import { createReadStream } from "node:fs"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { basename } from "node:path"
import { randomUUID } from "node:crypto"
import { Config, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Model } from "@lm/domain/core"
import { restBase } from "@lm/api"
import { given, json, paging, printList, printOne } from "./Output.js"
import { MissingSetting, onServer, Refused } from "./Server.js"

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

/** `n` bytes for people: `512 B`, `3.4 MiB`. */
const bytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`

/** The progress bar's line for `sent` of `total` bytes. */
export const progressLine = (sent: number, total: number) => {
  const ratio = total === 0 ? 1 : sent / total
  const filled = Math.round(ratio * 30)
  return `[${"#".repeat(filled)}${"-".repeat(30 - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${bytes(sent)}/${bytes(total)}`
}

/**
 * Reports upload progress on stderr: redrawn in place on a terminal (at most every 100 ms); otherwise one line per
 * tenth. The final line (100%) is always written.
 */
const progressReporter = (total: number) => {
  const tty = process.stderr.isTTY === true
  let lastDraw = 0
  let lastTenth = -1
  return (sent: number) => {
    const finished = sent >= total
    if (tty) {
      const now = Date.now()
      if (!finished && now - lastDraw < 100) return
      lastDraw = now
      process.stderr.write(`\r${progressLine(sent, total)}${finished ? "\n" : ""}`)
    } else {
      const tenth = total === 0 ? 10 : Math.floor((sent / total) * 10)
      if (tenth === lastTenth) return
      lastTenth = tenth
      process.stderr.write(`${progressLine(sent, total)}\n`)
    }
  }
}

/** POSTs the multipart body (fields, then the file) and answers the status and parsed JSON. */
const upload = (url: URL, auth: string, fields: Record<string, string>, file: string, size: number) =>
  Effect.callback<{ readonly status: number; readonly body: any }, Refused>((resume) => {
    const boundary = `lm-${randomUUID()}`
    const head = Object.entries(fields).map(([k, v]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`
    ).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${basename(file).replace(/"/g, "")}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n"
    const tail = `\r\n--${boundary}--\r\n`
    const report = progressReporter(size)
    // The server may answer before the whole file is sent (a refusal such as `release_exists`): from the first
    // answer on, the file is no longer read and no progress is drawn, so the refusal is the last line on stderr.
    let settled = false
    let answered = false
    const settle = (effect: Effect.Effect<{ readonly status: number; readonly body: any }, Refused>) => {
      if (settled) return
      settled = true
      stream.destroy()
      resume(effect)
    }
    const stream = createReadStream(file)
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: "POST",
      headers: {
        authorization: auth,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": Buffer.byteLength(head) + size + Buffer.byteLength(tail)
      }
    }, (response) => {
      answered = true
      stream.destroy()
      response.on("error", () =>
        settle(Effect.fail(new Refused({ code: "bad_answer", message: `the server's answer broke off (${response.statusCode})` }))))
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => { text += chunk })
      response.on("end", () => {
        try {
          settle(Effect.succeed({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
        } catch {
          settle(Effect.fail(new Refused({ code: "bad_answer", message: `unexpected answer from the server (${response.statusCode})` })))
        }
      })
    })
    // After an early answer the server may close before the rest is written: that error is not the outcome.
    request.on("error", (error) => answered ||
      settle(Effect.fail(new Refused({ code: "unreachable", message: `cannot reach the server at LM_URL: ${error.message}` }))))
    request.write(head)
    let sent = 0
    report(0)
    stream.on("data", (chunk) => {
      if (settled || stream.destroyed) return
      sent += chunk.length
      report(sent)
      if (!request.write(chunk)) {
        stream.pause()
        request.once("drain", () => stream.resume())
      }
    })
    stream.on("end", () => request.end(tail))
    stream.on("error", (error) => {
      request.destroy()
      settle(Effect.fail(new Refused({ code: "file_unreadable", message: `cannot read ${file}: ${error.message}` })))
    })
    return Effect.sync(() => request.destroy())
  })

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
    const url = yield* Config.String("LM_URL").pipe(Effect.mapError(() => new MissingSetting({ message: "LM_URL is not set: publish uploads to a running server" })))
    const restRoot = yield* Config.String("LM_REST_ROOT").pipe(Config.withDefault("/api"), Effect.orDie)
    const key = yield* Config.String("LM_CONSUMER_KEY").pipe(Config.withDefault(""), Effect.orDie)
    const secret = yield* Config.String("LM_CONSUMER_SECRET").pipe(Config.withDefault(""), Effect.orDie)
    const size = yield* Effect.tryPromise({
      try: () => stat(file).then((s) => s.size),
      catch: (error) => new Refused({ code: "file_unreadable", message: `cannot read ${file}: ${(error as Error).message}` })
    })
    const fields: Record<string, string> = { product_id: String(product_id) }
    for (const [k, v] of Object.entries(flags)) if (Option.isOption(v) && Option.isSome(v)) fields[k] = String(v.value)
    else if (typeof v === "string") fields[k] = v
    const target = new URL(`${restBase({ baseUrl: url, restRoot })}/lm/v1/releases`)
    const auth = `Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}`
    const answer = yield* upload(target, auth, fields, file, size)
    if (answer.body?.success !== true) {
      return yield* new Refused({ code: String(answer.body?.code ?? answer.status), message: String(answer.body?.message ?? "refused") })
    }
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

