/**
 * The artifact store on a folder (default `{LM_DATA_DIR}/artifacts`): each upload streams into a temporary file
 * while its SHA-256 and size are computed, and is renamed to its key only once complete, so a crash, a cut-off
 * upload or one over the limit never leaves a readable partial file (the temporary one is removed). The folder is
 * 0700 and its files 0600, like the rest of the data folder.
 */
import { createHash, randomUUID } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Effect, Layer } from "effect"
import { Errors, Ports } from "@lm/domain"

/** Keys are the store's own (random UUIDs): nothing a client sends names a file. */
const KEY = /^[0-9a-f-]{36}$/

/** Counts and hashes the bytes going through; fails past `maxBytes` (every artifact store uses it). */
export const measuring = (maxBytes: number) => {
  const hash = createHash("sha256")
  let size = 0
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length
      if (size > maxBytes) return done(new Ports.ArtifactTooLarge(maxBytes) as unknown as Error)
      hash.update(chunk)
      done(null, chunk)
    }
  })
  return { transform, result: () => ({ size, sha256: hash.digest("hex") }) }
}

const unavailable = (what: string) => (cause: unknown) =>
  new Errors.StorageUnavailable({ message: `The artifact store could not ${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/** The artifact store in `dir` (created 0700 when missing). */
export const make = (dir: string): Effect.Effect<Ports.ArtifactStore["Service"], Errors.StorageUnavailable> =>
  Effect.gen(function*() {
    yield* Effect.tryPromise({
      try: async () => {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 })
        await fs.chmod(dir, 0o700)
      },
      catch: unavailable(`create ${dir}`)
    })
    const fileOf = (key: string) => path.join(dir, key)
    return Ports.ArtifactStore.of({
      put: (body, maxBytes) =>
        Effect.tryPromise({
          try: async (signal) => {
            const key = randomUUID()
            const temporary = path.join(dir, `.upload-${key}`)
            const measure = measuring(maxBytes)
            try {
              await pipeline(body, measure.transform, createWriteStream(temporary, { mode: 0o600, flags: "wx" }), { signal })
              await fs.rename(temporary, fileOf(key))
              return { key, ...measure.result() }
            } finally {
              await fs.rm(temporary, { force: true })
            }
          },
          catch: (cause) => cause instanceof Ports.ArtifactTooLarge ? cause : unavailable("store an upload")(cause)
        }),
      open: (key, range) =>
        Effect.tryPromise({
          try: async () => {
            if (!KEY.test(key)) return undefined
            const handle = await fs.open(fileOf(key), "r").catch((e: NodeJS.ErrnoException) => {
              if (e.code === "ENOENT") return undefined
              throw e
            })
            if (handle === undefined) return undefined
            return createReadStream("", { fd: handle, ...(range === undefined ? {} : { start: range.start, end: range.end }) })
          },
          catch: unavailable("read an artifact")
        }),
      delete: (key) =>
        KEY.test(key) ? Effect.tryPromise({ try: () => fs.rm(fileOf(key), { force: true }), catch: unavailable("delete an artifact") }) : Effect.void
    })
  })

/** The artifact store in `dir` as a layer. */
export const layer = (dir: string): Layer.Layer<Ports.ArtifactStore, Errors.StorageUnavailable> => Layer.effect(Ports.ArtifactStore, make(dir))
