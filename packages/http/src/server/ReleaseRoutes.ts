/**
 * The raw handlers of the two release routes whose bodies are not JSON envelopes under the 1 MiB cap
 * (CONTRACT §9). Both are endpoints of the HttpApi (`api/Releases.ts`: the OpenAPI document, CORS, the
 * `Authentication` middleware of `POST /releases`); their handlers (`handlers/Releases.ts`) hand the raw request
 * here:
 *
 * - `POST {api_base}/releases` (API key, write scope): `multipart/form-data` parsed by busboy as it arrives, the
 *   fields before or after one `file` part streamed to the artifact store (SHA-256 and size computed on the way, at
 *   most `LM_MAX_ARTIFACT_BYTES`: past it 413 and nothing is kept; no byte for `LM_UPLOAD_IDLE_TIMEOUT_SECONDS`, or
 *   not done within `LM_UPLOAD_TIMEOUT_SECONDS`: 408 and nothing is kept); or JSON (under the usual 1 MiB cap and JSON rules) with `artifact_url` for an
 *   external artifact. Anything else is 415.
 * - `GET`/`HEAD {api_base}/updates/download?token=…` (public): the public guards (rate limits), then the token
 *   and the license are checked by the domain, then the artifact streams from the store with `Content-Length`,
 *   `Content-Disposition`, `ETag` (its SHA-256), `Accept-Ranges`, one `Range` (206, or 416 when unsatisfiable),
 *   `If-None-Match` (304) and `If-Range`; an external artifact is a 302 to its URL.
 */
import type { IncomingMessage } from "node:http"
import type { Readable } from "node:stream"
import busboy from "busboy"
import { Context, Effect, Exit, Layer, Schema } from "effect"
import { Errors, Model, Ports, Releases, type Services } from "@lm/domain"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { ExternalReleasePayload, releaseFields } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { ok } from "@lm/api"
import { releaseToWire } from "@lm/api/wire"
import { idleTimer, takeOverBodyTimeout } from "./BodyTimeout.js"
import { clientIp } from "./ClientIp.js"
import { ifNoneMatchMatches } from "./EntityTags.js"
import { makePublicGuard } from "./ClientPipeline.js"
import { foreignCharset, refuseBodyText, unsupportedCharset } from "./ErrorEnvelope.js"
import { envelope, errorResponse } from "./Responses.js"
import { payloadTooLarge } from "./Routing.js"
import { HttpSettings } from "./Settings.js"

const badParams = (params: Record<string, string>) =>
  envelope(400, "rest_invalid_param", `Invalid parameter: ${Object.keys(params).join(", ")}.`, { params })

/** A multipart body that ended early or broke the multipart grammar: the client's fault, never an outage. */
const incompleteBody = () => badParams({ body: "is not a complete multipart/form-data body" })

/** The most text fields a multipart upload may have (a release has 7). */
const maxFields = 20

/** The release fields of an upload (multipart text, `product_id` read as a number) or of a JSON body. */
const ReleaseFields = Schema.Struct({ product_id: Schema.Int, ...releaseFields })

/** The release input of decoded fields, or the 400 naming the bad ones. */
const releaseInput = (fields: typeof ReleaseFields.Type): Services.ReleaseInput | HttpServerResponse.HttpServerResponse => {
  let releasedAt: number | undefined
  if (fields.released_at !== undefined) {
    releasedAt = Date.parse(fields.released_at)
    if (!/^\d{4}-\d\d-\d\dT/.test(fields.released_at) || Number.isNaN(releasedAt)) return badParams({ released_at: "must be an ISO 8601 time" })
  }
  return {
    productId: fields.product_id,
    version: fields.version,
    channel: fields.channel,
    changelog: fields.changelog,
    minAppVersion: fields.min_app_version,
    entitlements: fields.entitlements,
    releasedAt
  }
}

/** Decodes fields, naming each bad one (unknown fields are refused, as on every management write). */
const decodeFields = <A, I>(schema: Schema.Codec<A, I>, value: unknown): A | HttpServerResponse.HttpServerResponse => {
  const result = Schema.decodeUnknownExit(schema, { errors: "all", onExcessProperty: "error" })(value)
  if (result._tag === "Success") return result.value
  const params: Record<string, string> = {}
  const issue = String(result.cause)
  for (const key of Object.keys(ExternalReleasePayload.fields)) {
    if (issue.includes(`["${key}"]`)) params[key] = fieldExpectations[key] ?? "is missing or invalid"
  }
  if (Object.keys(params).length === 0) params.body = "has missing, unknown or invalid fields"
  return badParams(params)
}

/** What a field must be, where "is missing or invalid" would not say it. */
const fieldExpectations: Readonly<Record<string, string>> = {
  channel: `must be one of ${Model.releaseChannels.join(", ")}`
}

/** Multipart text fields as the JSON values the schema expects (`product_id` is a number). */
const multipartFields = (fields: Record<string, string>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...fields }
  if (fields.product_id !== undefined) out.product_id = /^[0-9]{1,15}$/.test(fields.product_id) ? Number(fields.product_id) : fields.product_id
  // A form carries a list of codes as one comma-separated field.
  if (fields.entitlements !== undefined) out.entitlements = fields.entitlements.split(",").map((code) => code.trim()).filter((code) => code !== "")
  return out
}

/** A multipart form once it has ended: its text fields, and the refusal they earned (too long, too many). */
interface EndedForm {
  readonly fields: Record<string, string>
  readonly refusal: HttpServerResponse.HttpServerResponse | undefined
}

/** The upload route's and the download route's raw handlers; refusals are answered with their envelope. */
export class ReleaseRoutes extends Context.Service<ReleaseRoutes, {
  /** `POST /releases`, after the `Authentication` middleware. */
  readonly upload: (request: HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `GET`/`HEAD /updates/download` with the query's token. */
  readonly download: (request: HttpServerRequest, token: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("lm/http/ReleaseRoutes") {
  static readonly layer = Layer.effect(ReleaseRoutes, Effect.gen(function*() {
    const settings = yield* HttpSettings
    const releases = yield* Releases
    const artifacts = yield* Ports.ArtifactStore
    const guard = yield* makePublicGuard
    const context = yield* Effect.context<never>()
    const run = <A>(effect: Effect.Effect<A>, signal: AbortSignal) => Effect.runPromiseExitWith(context)(effect, { signal })

    /** The answer to an upload that failed: over the limit 413; the body's fault 400; else the error's envelope. */
    const uploadRefusal = (error: ApiErrors.AnyError | Ports.ArtifactTooLarge, bodyFailed: () => boolean) =>
      error instanceof Ports.ArtifactTooLarge ? payloadTooLarge(error.maxBytes) : bodyFailed() ? incompleteBody() : errorResponse(error)

    /**
     * Publishes an uploaded artifact. The fields may come before or after the `file` part: when the required ones
     * came before it, the release is checked first (a taken version is refused before anything is stored); the
     * file then streams to the artifact store (it is never held), and the release is published once the form has
     * ended (`formEnded`: every field is in). The artifact is removed again when the fields or the release are
     * refused. The file stream also fails when the body does (cut short, malformed, the client gone, stalled:
     * `bodyFailed`), which is the client's doing (400, nothing stored), not the artifact store's (503).
     */
    const publishUpload = (
      early: Services.ReleaseInput | undefined,
      file: Readable,
      info: busboy.FileInfo,
      bodyFailed: () => boolean,
      formEnded: Promise<EndedForm>
    ) =>
      Effect.gen(function*() {
        if (early !== undefined) {
          const prepared = yield* Effect.exit(releases.prepare(early))
          if (prepared._tag === "Failure") {
            file.resume()
            return yield* Effect.failCause(prepared.cause)
          }
          // The body may have failed while the store was asked: there is nothing to store then.
          if (bodyFailed()) return incompleteBody()
        }
        const stored = yield* artifacts.put(file, settings.maxArtifactBytes)
        const removeArtifact = Effect.ignore(artifacts.delete(stored.key))
        const form = yield* Effect.promise(() => formEnded)
        if (bodyFailed()) return yield* Effect.as(removeArtifact, incompleteBody())
        const decoded = form.refusal ?? decodeFields(ReleaseFields, multipartFields(form.fields))
        const input = HttpServerResponse.isHttpServerResponse(decoded) ? decoded : releaseInput(decoded)
        if (HttpServerResponse.isHttpServerResponse(input)) return yield* Effect.as(removeArtifact, input)
        const release = yield* releases.publish(input, {
          _tag: "Stored",
          key: stored.key,
          size: stored.size,
          sha256: stored.sha256,
          filename: info.filename || "artifact",
          contentType: info.mimeType || "application/octet-stream"
        }).pipe(Effect.onError(() => removeArtifact))
        return HttpServerResponse.jsonUnsafe(ok(releaseToWire(release)), { status: 201 })
      }).pipe(Effect.catch((error) => Effect.succeed(uploadRefusal(error, bodyFailed))))

    /** Reads a multipart upload as it arrives; answers once the form has ended (or the upload was refused). */
    const multipart = (source: IncomingMessage) =>
      Effect.callback<HttpServerResponse.HttpServerResponse>((resume) => {
        let parser: busboy.Busboy
        try {
          parser = busboy({
            headers: source.headers,
            defParamCharset: "utf8",
            // A field one byte over the fields' limit is flagged truncated (a value exactly at busboy's limit is too).
            limits: { files: 1, fields: maxFields, fieldSize: settings.maxBodyBytes + 1, parts: maxFields + 1 }
          })
        } catch {
          resume(Effect.succeed(badParams({ body: "must be multipart/form-data with a boundary" })))
          return
        }
        const fields: Record<string, string> = {}
        // The text fields are bound as a JSON body is (`maxBodyBytes` in all), never cut short silently: past it, or
        // past `maxFields`, the upload is refused naming the field (or the body).
        let fieldBytes = 0
        let refusal: HttpServerResponse.HttpServerResponse | undefined
        // The answer of the file part: a response, or a defect for the global middleware's 500.
        let answer: Promise<Exit.Exit<HttpServerResponse.HttpServerResponse>> | undefined
        let done = false
        // Settled when the form has ended (all fields in), for a file part that came before the fields.
        let formEnded!: (form: EndedForm) => void
        const ended = new Promise<EndedForm>((resolve) => (formEnded = resolve))
        const finish = (result: HttpServerResponse.HttpServerResponse | Exit.Exit<HttpServerResponse.HttpServerResponse>) => {
          stopTimers()
          if (done) return
          done = true
          resume(HttpServerResponse.isHttpServerResponse(result) ? Effect.succeed(result) : result)
        }
        // Every way the body fails destroys the parser with an error (busboy's own: cut short, malformed; or below:
        // the client gone, stalled, the request interrupted), which fails the file stream too.
        const bodyFailed = () => parser.errored !== null
        // An upload over a slow link may take far longer than the total body timeout of other routes: it is cut
        // off with 408 when no byte arrives for the idle timeout, or when it is not done within the upload timeout.
        // Destroying the parser fails the file stream, so the store removes what it had written and no release is
        // published.
        takeOverBodyTimeout(source)
        const cutOff = (message: string) => {
          source.unpipe(parser)
          parser.destroy(new Error(message))
          finish(envelope(408, "rest_request_timeout", message, undefined, { connection: "close" }))
        }
        const idle = idleTimer(settings.uploadIdleTimeoutSeconds * 1000, () => {
          if (!source.complete) cutOff(`No part of the upload arrived for ${settings.uploadIdleTimeoutSeconds} s.`)
        })
        source.on("data", idle.touch)
        source.once("end", idle.stop)
        // The upload timeout bounds the whole upload, the store's part included (its fiber is interrupted: the
        // store removes the unfinished file or aborts the multipart upload), so that an unfinished upload older
        // than it is known to be a leftover of a process that died (see the artifact stores).
        const interrupt = new AbortController()
        const deadline = setTimeout(() => {
          interrupt.abort()
          cutOff(`The upload did not complete within ${settings.uploadTimeoutSeconds} s.`)
        }, settings.uploadTimeoutSeconds * 1000)
        const stopTimers = () => {
          idle.stop()
          clearTimeout(deadline)
        }
        parser.on("field", (name, value, info) => {
          fieldBytes += Buffer.byteLength(value)
          if (info.valueTruncated || fieldBytes > settings.maxBodyBytes) {
            refusal ??= badParams({ [name]: `is too long: the fields may take ${settings.maxBodyBytes} bytes in all, as a JSON body` })
          }
          fields[name] = value
        })
        const tooManyParts = () => {
          refusal ??= badParams({ body: `has more than ${maxFields} fields` })
        }
        parser.on("fieldsLimit", tooManyParts)
        parser.on("partsLimit", tooManyParts)
        parser.on("file", (name, file, info) => {
          // The file stream fails with the body, possibly before anything reads it (the release is checked in the
          // store first): its error is handled from the start, and read through `bodyFailed`.
          file.on("error", () => {})
          if (name !== "file" || answer !== undefined) {
            file.resume()
            return
          }
          if (refusal !== undefined) {
            file.resume()
            answer = Promise.resolve(Exit.succeed(refusal))
            return
          }
          // Fields may follow the file part: with the release's required ones in already, they are checked now (a
          // refusal answers before the file is read); else once the form has ended.
          let early: Services.ReleaseInput | undefined
          if (fields.product_id !== undefined && fields.version !== undefined) {
            const decoded = decodeFields(ReleaseFields, multipartFields(fields))
            const input = HttpServerResponse.isHttpServerResponse(decoded) ? decoded : releaseInput(decoded)
            if (HttpServerResponse.isHttpServerResponse(input)) {
              file.resume()
              answer = Promise.resolve(Exit.succeed(input))
              return
            }
            early = input
          }
          // Interrupted only by the upload timeout, which has answered already.
          answer = run(publishUpload(early, file, info, bodyFailed, ended), interrupt.signal)
          // Refused before the whole body arrived (over the limit, a duplicate, the artifact store down): answer
          // now; the rest is not read.
          void answer.then((exit) => {
            if (exit._tag === "Failure" || exit.value.status !== 201) {
              source.unpipe(parser)
              finish(exit)
            }
          })
        })
        parser.on("close", () => {
          formEnded({ fields, refusal })
          if (answer === undefined) finish(refusal ?? badParams({ file: "is required (a part named file)" }))
          else void answer.then(finish)
        })
        parser.on("error", (error) => {
          // A body cut short or malformed: whatever was streamed is removed by the store (the file stream fails).
          // busboy emits some errors without destroying itself (a malformed part header): destroyed here.
          parser.destroy(error instanceof Error ? error : new Error(String(error)))
          formEnded({ fields, refusal })
          if (answer === undefined) finish(incompleteBody())
          else void answer.then(finish)
        })
        // A client that goes away midway: the parser is destroyed, which fails the file stream, so the store
        // removes what it had written and no release is published.
        source.on("close", () => {
          if (!source.complete) parser.destroy(new Error("The client went away before the upload ended."))
        })
        source.pipe(parser)
        return Effect.sync(() => {
          stopTimers()
          parser.destroy(new Error("The request was interrupted."))
        })
      })

    /** A JSON body naming an external artifact. */
    const external = (request: HttpServerRequest) =>
      Effect.gen(function*() {
        const length = Number(request.headers["content-length"] ?? "0")
        if (length > settings.maxBodyBytes) return payloadTooLarge(settings.maxBodyBytes)
        const text = yield* Effect.orElseSucceed(request.text, () => undefined)
        if (text === undefined) return payloadTooLarge(settings.maxBodyBytes)
        const refused = refuseBodyText(text)
        if (refused !== undefined) return refused
        let json: unknown
        try {
          json = JSON.parse(text === "" ? "{}" : text)
        } catch {
          return envelope(400, "rest_invalid_json", "The request body is not valid JSON.")
        }
        const body = decodeFields(ExternalReleasePayload, json)
        if (HttpServerResponse.isHttpServerResponse(body)) return body
        const input = releaseInput(body)
        if (HttpServerResponse.isHttpServerResponse(input)) return input
        let url: URL | undefined
        try {
          url = new URL(body.artifact_url)
        } catch {
          url = undefined
        }
        if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
          return badParams({ artifact_url: "must be an http or https URL" })
        }
        return yield* releases.publish(input, {
          _tag: "External",
          url: url.href,
          filename: body.filename,
          size: body.size,
          sha256: body.sha256,
          contentType: body.content_type
        }).pipe(
          Effect.map((release) => HttpServerResponse.jsonUnsafe(ok(releaseToWire(release)), { status: 201 })),
          Effect.catch((error) => Effect.succeed(errorResponse(error)))
        )
      })

    /** `POST /releases`, after the `Authentication` middleware. */
    const upload = (request: HttpServerRequest) => Effect.gen(function*() {
      const contentType = (request.headers["content-type"] ?? "").toLowerCase()
      if (contentType.startsWith("multipart/form-data")) return yield* multipart(request.source as IncomingMessage)
      if (contentType === "" || contentType.startsWith("application/json")) {
        const charset = foreignCharset(request.headers["content-type"])
        if (charset !== undefined) return unsupportedCharset(charset)
        return yield* external(request)
      }
      return envelope(415, "rest_unsupported_media_type", "The body must be multipart/form-data (with a file part) or JSON (with artifact_url).")
    })

    /** `GET`/`HEAD /updates/download`: the public guards (per client IP: the key is known only once the token is checked), then the download. */
    const download = (request: HttpServerRequest, token: string | undefined) => Effect.gen(function*() {
      const ip = clientIp(request, settings.trustProxyHops)
      if (guard !== undefined) {
        const admitted = yield* Effect.exit(guard({ clientIp: ip, headers: request.headers, endpoint: "download", licenseKey: undefined }))
        if (admitted._tag === "Failure") {
          const failure = admitted.cause.reasons.find((r) => r._tag === "Fail")
          if (failure?._tag === "Fail") return errorResponse(failure.error)
          return yield* Effect.failCause(admitted.cause)
        }
      }
      if (token === undefined || token === "") return errorResponse(Errors.downloadTokenInvalid())
      const authorized = yield* Effect.exit(releases.authorizeDownload(token, ip ?? null))
      if (authorized._tag === "Failure") {
        const failure = authorized.cause.reasons.find((r) => r._tag === "Fail")
        if (failure?._tag === "Fail") return errorResponse(failure.error)
        return yield* Effect.failCause(authorized.cause)
      }
      const release = authorized.value
      if (release.artifactUrl !== null) return HttpServerResponse.redirect(release.artifactUrl, { status: 302 })
      return yield* serveArtifact(request, release)
    })

    const serveArtifact = (request: HttpServerRequest, release: Parameters<typeof releaseToWire>[0]) =>
      Effect.gen(function*() {
        const size = release.size ?? 0
        const etag = `"${release.sha256}"`
        const headers: Record<string, string> = {
          etag,
          "accept-ranges": "bytes",
          "content-disposition": contentDisposition(release.filename ?? "artifact"),
          "cache-control": "private, no-store"
        }
        if (ifNoneMatchMatches(request.headers["if-none-match"], etag)) return HttpServerResponse.empty({ status: 304, headers })
        const rangeHeader = request.headers.range
        const ifRange = request.headers["if-range"]
        const range = rangeHeader !== undefined && (ifRange === undefined || ifRange === etag) ? parseRange(rangeHeader, size) : undefined
        if (range === "unsatisfiable") {
          return errorResponse(ApiErrors.make(416, "rest_range_not_satisfiable", "The range is outside the artifact."), {
            "content-range": `bytes */${size}`
          })
        }
        const status = range === undefined ? 200 : 206
        const start = range?.start ?? 0
        const end = range?.end ?? size - 1
        if (range !== undefined) headers["content-range"] = `bytes ${start}-${end}/${size}`
        const length = size === 0 ? 0 : end - start + 1
        const contentType = release.contentType ?? "application/octet-stream"
        if (request.method === "HEAD" || length === 0) {
          return HttpServerResponse.empty({ status, headers: { ...headers, "content-type": contentType, "content-length": String(length) } })
        }
        const body = yield* Effect.orElseSucceed(artifacts.open(release.artifactKey ?? "", { start, end }), () => undefined)
        if (body === undefined) return envelope(404, "release_not_found", "The release's artifact is not in the artifact store.")
        return HttpServerResponse.raw(body, { status, headers, contentType, contentLength: length })
      })

    const answered = (effect: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiErrors.DomainErrorLike | ApiErrors.ApiError>) =>
      Effect.catch(effect, (error) => Effect.succeed(errorResponse(error)))
    return ReleaseRoutes.of({
      upload: (request) => answered(upload(request)),
      download: (request, token) => answered(download(request, token))
    })
  }))
}

/** `attachment` with the name as plain ASCII and as UTF-8 (RFC 6266). */
const contentDisposition = (filename: string): string => {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

/**
 * One byte range of `bytes=a-b`, `bytes=a-` or `bytes=-n` clamped to the artifact; several ranges or another unit
 * are ignored (the whole artifact is sent); a range starting past the end is unsatisfiable.
 */
export const parseRange = (header: string, size: number): { readonly start: number; readonly end: number } | "unsatisfiable" | undefined => {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, from, to] = match
  if (from === "" && to === "") return undefined
  if (from === "") {
    const suffix = Number(to)
    if (suffix === 0 || size === 0) return "unsatisfiable"
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(from)
  const end = to === "" ? size - 1 : Math.min(Number(to), size - 1)
  if (to !== "" && Number(to) < start) return undefined
  if (start >= size) return "unsatisfiable"
  return { start, end }
}
