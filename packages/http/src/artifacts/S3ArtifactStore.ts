/**
 * The artifact store on an S3-compatible bucket (AWS S3, MinIO, R2, …), for several servers behind a load
 * balancer. Uploads stream through `@aws-sdk/lib-storage`'s `Upload` (a multipart upload in 5 MiB parts, a single
 * PUT when smaller) while SHA-256 and size are computed; an object only becomes visible when its upload completes,
 * and a failed, cut-off or over-the-limit upload is aborted (its parts removed), so nothing partial is ever read.
 * A process killed midway cannot abort its multipart upload: one of the store's keys initiated longer ago than the
 * longest upload is such a leftover, aborted at start and then once per that period (a bucket lifecycle rule
 * `AbortIncompleteMultipartUpload` does the same in days).
 */
import { randomUUID } from "node:crypto"
import { PassThrough, Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  NoSuchKey,
  S3Client,
  type S3ClientConfig
} from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { Clock, Effect, Layer } from "effect"
import { Errors, Ports } from "@lm/domain"
import { KEY, type LeftoverOptions, measuring, removeLeftoversEvery, reportLeftovers } from "./FileArtifactStore.js"

export interface S3ArtifactStoreOptions extends LeftoverOptions {
  readonly bucket: string
  /** Prepended to every key (e.g. `artifacts/`). */
  readonly prefix?: string | undefined
  /** The S3 client's settings: `endpoint`, `region`, `credentials`, `forcePathStyle` for S3-compatible servers. */
  readonly client: S3ClientConfig
}

const unavailable = (what: string) => (cause: unknown) =>
  new Errors.StorageUnavailable({ message: `The artifact store could not ${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * Aborts the multipart uploads of the store's keys (`prefix` and a UUID: another writer's are left alone) initiated
 * more than `olderThanMillis` ago; how many it aborted.
 */
export const abortLeftovers = (client: S3Client, bucket: string, prefix: string, olderThanMillis: number) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.tryPromise({
      try: async () => {
        let aborted = 0
        let keyMarker: string | undefined
        let uploadIdMarker: string | undefined
        for (;;) {
          const page = await client.send(new ListMultipartUploadsCommand({
            Bucket: bucket,
            Prefix: prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker
          }))
          for (const upload of page.Uploads ?? []) {
            const { Key: key, UploadId: uploadId, Initiated: initiated } = upload
            if (key === undefined || uploadId === undefined || initiated === undefined) continue
            if (!KEY.test(key.slice(prefix.length)) || now - initiated.getTime() <= olderThanMillis) continue
            await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
            aborted++
          }
          if (page.IsTruncated !== true) return aborted
          keyMarker = page.NextKeyMarker
          uploadIdMarker = page.NextUploadIdMarker
        }
      },
      catch: unavailable("abort the multipart uploads left by a crash")
    }))

/** The artifact store in an S3 bucket; the client is destroyed when the scope closes. The leftovers of a crash are aborted first. */
export const make = (options: S3ArtifactStoreOptions) =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => new S3Client(options.client)),
      (client) => Effect.sync(() => client.destroy())
    )
    const prefix = options.prefix ?? ""
    const after = options.leftoverAfterMillis
    if (after !== undefined) {
      const removal = reportLeftovers(abortLeftovers(client, options.bucket, prefix, after), "multipart uploads")
      yield* removal
      yield* removeLeftoversEvery(removal, after)
    }
    return Ports.ArtifactStore.of({
      put: (body, maxBytes) =>
        Effect.tryPromise({
          try: async (signal) => {
            const key = randomUUID()
            const measure = measuring(maxBytes)
            const through = new PassThrough()
            const piping = pipeline(Readable.from(body), measure.transform, through, { signal })
            const upload = new Upload({
              client,
              params: { Bucket: options.bucket, Key: `${prefix}${key}`, Body: through },
              leavePartsOnError: false,
              abortController: signalController(signal)
            })
            // The first failure wins: the source's (over the limit, cut off) aborts the upload.
            const [piped, uploaded] = await Promise.allSettled([piping, upload.done()])
            if (piped.status === "rejected") {
              await upload.abort().catch(() => undefined)
              await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: `${prefix}${key}` })).catch(() => undefined)
              throw piped.reason
            }
            if (uploaded.status === "rejected") throw uploaded.reason
            return { key, ...measure.result() }
          },
          catch: (cause) => cause instanceof Ports.ArtifactTooLarge ? cause : unavailable("store an upload")(cause)
        }),
      open: (key, range) =>
        Effect.tryPromise({
          try: async () => {
            try {
              const answer = await client.send(new GetObjectCommand({
                Bucket: options.bucket,
                Key: `${prefix}${key}`,
                ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
              }))
              if (answer.Body === undefined) return undefined
              const bytes = answer.Body as AsyncIterable<Uint8Array>
              if (range === undefined) return Readable.from(bytes)
              // A server may answer a wider range than asked (HTTP lets it ignore Range; s3rver widens `bytes=0-0`):
              // the answer is cut to the range asked for, from where its Content-Range says it starts.
              const served = /^bytes (\d+)-/.exec(answer.ContentRange ?? "")
              const from = served === null ? 0 : Number(served[1])
              return Readable.from(slice(bytes, range.start - from, range.end - range.start + 1))
            } catch (error) {
              if (error instanceof NoSuchKey) return undefined
              throw error
            }
          },
          catch: unavailable("read an artifact")
        }),
      delete: (key) =>
        Effect.tryPromise({
          try: () => client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: `${prefix}${key}` })),
          catch: unavailable("delete an artifact")
        }).pipe(Effect.asVoid)
    })
  })

/** `take` bytes of `source` after skipping `skip`. */
async function* slice(source: AsyncIterable<Uint8Array>, skip: number, take: number): AsyncGenerator<Uint8Array> {
  let toSkip = Math.max(0, skip)
  let left = take
  for await (const chunk of source) {
    if (left <= 0) break
    const start = Math.min(toSkip, chunk.length)
    toSkip -= start
    const part = chunk.subarray(start, start + left)
    left -= part.length
    if (part.length > 0) yield part
  }
}

/** An AbortController that aborts with `signal`. */
const signalController = (signal: AbortSignal): AbortController => {
  const controller = new AbortController()
  if (signal.aborted) controller.abort()
  else signal.addEventListener("abort", () => controller.abort(), { once: true })
  return controller
}

/** The artifact store in an S3 bucket as a layer. */
export const layer = (options: S3ArtifactStoreOptions): Layer.Layer<Ports.ArtifactStore> => Layer.effect(Ports.ArtifactStore, make(options))
