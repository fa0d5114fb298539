/**
 * The artifact store on a folder (default `{LM_DATA_DIR}/artifacts`): each upload streams into a temporary file
 * while its SHA-256 and size are computed, and is renamed to its key only once complete, so a crash, a cut-off
 * upload or one over the limit never leaves a readable partial file (the temporary one is removed). A process
 * killed midway cannot remove its temporary file: one last written longer ago than the longest upload is such a
 * leftover, removed at start and then once per that period. The folder is 0700 and its files 0600, like the rest
 * of the data folder.
 */
import { createHash, randomUUID } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Clock, Duration, Effect, Layer } from "effect"
import { Errors, Ports } from "@lm/domain"

/** Keys are the store's own (random UUIDs): nothing a client sends names a file. */
export const KEY = /^[0-9a-f-]{36}$/

/** The name of an upload's file until it is complete. */
const TEMPORARY = ".upload-"

/** How the stores find the unfinished uploads of a process that died. */
export interface LeftoverOptions {
  /**
   * The longest an upload may take (`LM_UPLOAD_TIMEOUT_SECONDS`), in milliseconds: an unfinished upload older than
   * it is no upload in progress, in this process or another sharing the store, but the leftover of one killed
   * midway. Undefined: leftovers are left alone.
   */
  readonly leftoverAfterMillis?: number | undefined
}

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

/** Removes the temporary files in `dir` last written more than `olderThanMillis` ago; how many it removed. */
export const removeLeftovers = (dir: string, olderThanMillis: number): Effect.Effect<number, Errors.StorageUnavailable> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.tryPromise({
      try: async () => {
        let removed = 0
        for (const name of await fs.readdir(dir)) {
          if (!name.startsWith(TEMPORARY)) continue
          const file = path.join(dir, name)
          // Gone meanwhile: renamed or removed by its own upload.
          const stat = await fs.lstat(file).catch(() => undefined)
          if (stat === undefined || !stat.isFile() || now - stat.mtimeMs <= olderThanMillis) continue
          await fs.rm(file, { force: true })
          removed++
        }
        return removed
      },
      catch: unavailable("remove the leftovers of uploads cut off by a crash")
    }))

/** {@link removeLeftovers}, said in the log (a failure too: the next round tries again). */
export const reportLeftovers = (removal: Effect.Effect<number, Errors.StorageUnavailable>, what: string) =>
  removal.pipe(
    Effect.tap((n) => n > 0 ? Effect.logInfo(`artifact store: removed ${n} ${what} of uploads cut off by a crash`) : Effect.void),
    Effect.catch((error) => Effect.logWarning(error.message)),
    Effect.asVoid
  )

/** The artifact store in `dir` (created 0700 when missing); the leftovers of a crash are removed first. */
export const make = (dir: string, options: LeftoverOptions = {}): Effect.Effect<Ports.ArtifactStore["Service"], Errors.StorageUnavailable> =>
  Effect.gen(function*() {
    yield* Effect.tryPromise({
      try: async () => {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 })
        await fs.chmod(dir, 0o700)
      },
      catch: unavailable(`create ${dir}`)
    })
    if (options.leftoverAfterMillis !== undefined) {
      yield* reportLeftovers(removeLeftovers(dir, options.leftoverAfterMillis), "unfinished files")
    }
    const fileOf = (key: string) => path.join(dir, key)
    return Ports.ArtifactStore.of({
      put: (body, maxBytes) =>
        Effect.tryPromise({
          try: async (signal) => {
            const key = randomUUID()
            const temporary = path.join(dir, `${TEMPORARY}${key}`)
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

/** Runs `removal` once per `everyMillis` for as long as the layer lives (a crash's leftovers while it runs). */
export const removeLeftoversEvery = (removal: Effect.Effect<void>, everyMillis: number) =>
  Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(Duration.millis(everyMillis)), removal)))

/** The artifact store in `dir` as a layer: leftovers removed at start and then once per `leftoverAfterMillis`. */
export const layer = (dir: string, options: LeftoverOptions = {}): Layer.Layer<Ports.ArtifactStore, Errors.StorageUnavailable> =>
  Layer.effect(Ports.ArtifactStore, makeSweeping(dir, options))

/** {@link make}, and (with `leftoverAfterMillis`) the leftovers removed again once per that period while the scope lasts. */
export const makeSweeping = (dir: string, options: LeftoverOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* make(dir, options)
    const after = options.leftoverAfterMillis
    if (after !== undefined) yield* removeLeftoversEvery(reportLeftovers(removeLeftovers(dir, after), "unfinished files"), after)
    return store
  })
