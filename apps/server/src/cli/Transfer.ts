/**
 * Bodies that move in bulk between `lm` and a running server, with progress on stderr: uploads (`releases
 * publish`, `licenses import`) streamed in one request, downloads (`licenses export`) streamed to a file or stdout.
 * Plain `node:http` rather than the typed client, so that the bytes can be counted as they go; the server's
 * address and key are the same settings as every other command's (`Server.ts`).
 */
import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import type { Readable, Writable } from "node:stream"
import { Effect } from "effect"
import { restBase } from "@lm/api"
import { connection, Refused } from "./Server.js"

/** The URL of `path` (under `/lm/v1`, with its query) on the server in `LM_URL`, and the key's `Authorization`. */
export const serverEndpoint = (path: string) =>
  Effect.map(connection, (options) => ({
    url: new URL(`${restBase(options)}/lm/v1${path}`),
    authorization: `Basic ${Buffer.from(`${options.credentials.consumerKey}:${options.credentials.consumerSecret}`).toString("base64")}`
  }))

/** `n` bytes for people: `512 B`, `3.4 MiB`. */
export const bytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`

/**
 * The progress bar's line for `done` of `total`: amounts as `show` writes them (bytes by default), then `unit`.
 */
export const progressLine = (done: number, total: number, show: (n: number) => string = bytes, unit = "") => {
  const ratio = total === 0 ? 1 : Math.min(1, done / total)
  const filled = Math.round(ratio * 30)
  return `[${"#".repeat(filled)}${"-".repeat(30 - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${show(done)}/${show(total)}${unit}`
}

/**
 * Reports progress on stderr: redrawn in place on a terminal (at most every 100 ms); otherwise one line per tenth.
 * The final line (100%) is always written: when `done` reaches `total`, or when `finished` says the transfer is
 * over (then `done` is the whole, whatever `total` was expected).
 */
export const progressReporter = (total: number, show: (n: number) => string = bytes, unit = "") => {
  const tty = process.stderr.isTTY === true
  let lastDraw = 0
  let lastTenth = -1
  let lastLine = ""
  return (done: number, finished = done >= total) => {
    const whole = finished ? done : Math.max(total, done)
    const line = progressLine(done, whole, show, unit)
    if (tty) {
      const now = Date.now()
      if (!finished && now - lastDraw < 100) return
      lastDraw = now
      process.stderr.write(`\r${line}${finished ? "\n" : ""}`)
    } else {
      const tenth = finished || whole === 0 ? 10 : Math.floor((done / whole) * 10)
      if (tenth === lastTenth && !(finished && line !== lastLine)) return
      lastTenth = tenth
      lastLine = line
      process.stderr.write(`${line}\n`)
    }
  }
}

/** An answer of the server: its status and parsed JSON. */
export interface Answer {
  readonly status: number
  readonly body: any
}

/** The refusal an envelope carries (`code: message`), or the status when the answer is not one. */
export const refusalOf = (answer: Answer) =>
  new Refused({ code: String(answer.body?.code ?? answer.status), message: String(answer.body?.message ?? "refused") })

const unreachable = (error: Error) => new Refused({ code: "unreachable", message: `cannot reach the server at LM_URL: ${error.message}` })

const requestOf = (url: URL) => (url.protocol === "https:" ? httpsRequest : httpRequest)

/** Collects a response's text and parses it as JSON. */
const readAnswer = (response: IncomingMessage, settle: (effect: Effect.Effect<Answer, Refused>) => void) => {
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
}

/** An upload: `head`, then the `size` bytes of `body` (counted for progress), then `tail`. */
export interface Upload {
  readonly contentType: string
  readonly head: string
  readonly body: Readable
  readonly size: number
  readonly tail: string
  /** Told of the body's bytes sent so far (starting at 0). */
  readonly progress: (sent: number) => void
  /** What a failure to read the body is (`file_unreadable`, naming the file). */
  readonly unreadable: (error: Error) => Refused
}

/** POSTs an upload to `url` and answers the status and parsed JSON. */
export const upload = (url: URL, authorization: string, up: Upload) =>
  Effect.callback<Answer, Refused>((resume) => {
    const stream = up.body
    // The server may answer before the whole body is sent (a refusal such as `release_exists`): from the first
    // answer on, the body is no longer read and no progress is drawn, so the refusal is the last line on stderr.
    let settled = false
    let answered = false
    const settle = (effect: Effect.Effect<Answer, Refused>) => {
      if (settled) return
      settled = true
      stream.destroy()
      resume(effect)
    }
    const request = requestOf(url)(url, {
      method: "POST",
      headers: {
        authorization,
        "content-type": up.contentType,
        "content-length": Buffer.byteLength(up.head) + up.size + Buffer.byteLength(up.tail)
      }
    }, (response) => {
      answered = true
      stream.destroy()
      readAnswer(response, settle)
    })
    // After an early answer the server may close before the rest is written: that error is not the outcome.
    request.on("error", (error) => answered || settle(Effect.fail(unreachable(error))))
    request.write(up.head)
    let sent = 0
    up.progress(0)
    stream.on("data", (chunk: Buffer) => {
      if (settled || stream.destroyed) return
      sent += chunk.length
      up.progress(sent)
      if (!request.write(chunk)) {
        stream.pause()
        request.once("drain", () => stream.resume())
      }
    })
    stream.on("end", () => request.end(up.tail))
    stream.on("error", (error) => {
      request.destroy()
      settle(Effect.fail(up.unreadable(error)))
    })
    return Effect.sync(() => request.destroy())
  })

/**
 * GETs `url` and writes its body to `sink` as it arrives (waiting for the sink when it is full), telling `chunk`
 * of each piece; answers the bytes written. An answer other than 200 is the refusal its envelope names; a body
 * cut short (the server failed while streaming) is `export_incomplete`.
 */
export const download = (url: URL, authorization: string, sink: Writable, chunk: (piece: Buffer) => void) =>
  Effect.callback<number, Refused>((resume) => {
    let settled = false
    const settle = (effect: Effect.Effect<number, Refused>) => {
      if (settled) return
      settled = true
      sink.off("error", unwritable)
      resume(effect)
    }
    // The output failing (a folder that does not exist, a full disk, a closed pipe) ends the download.
    const unwritable = (error: Error) => {
      request.destroy()
      settle(Effect.fail(new Refused({ code: "output_unwritable", message: `cannot write the export: ${error.message}` })))
    }
    sink.on("error", unwritable)
    const request = requestOf(url)(url, { method: "GET", headers: { authorization } }, (response) => {
      if (response.statusCode !== 200) {
        readAnswer(response, (answer) => settle(Effect.flatMap(answer, (a) => Effect.fail(refusalOf(a)))))
        return
      }
      let received = 0
      const cut = () =>
        settle(Effect.fail(new Refused({ code: "export_incomplete", message: `the server's answer broke off after ${bytes(received)}` })))
      response.on("aborted", cut)
      response.on("error", cut)
      response.on("data", (piece: Buffer) => {
        received += piece.length
        chunk(piece)
        if (!sink.write(piece)) {
          response.pause()
          sink.once("drain", () => response.resume())
        }
      })
      response.on("end", () => {
        if (!response.complete) return cut()
        settle(Effect.succeed(received))
      })
    })
    request.on("error", (error) => settle(Effect.fail(unreachable(error))))
    request.end()
    return Effect.sync(() => {
      request.destroy()
      sink.off("error", unwritable)
    })
  })
