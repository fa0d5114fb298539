/**
 * The artifact store contract (every implementation runs it): bytes, size and SHA-256 round-trip exactly for a
 * multi-megabyte artifact streamed in chunks, byte ranges read exactly, an upload over the limit or one whose
 * source fails midway leaves nothing behind, deletes are final; what a process killed midway left unfinished is
 * removed by a store starting once the longest upload has passed, never an upload still in progress. The folder
 * implementation also keeps its files private (folder 0700, files 0600).
 */
import { createHash, randomUUID } from "node:crypto"
import { mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { type Errors, Ports } from "@lm/domain"
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import S3rver from "s3rver"
import { eventually } from "../../../test/support/eventually.js"
import * as FileArtifactStore from "../src/artifacts/FileArtifactStore.js"
import * as S3ArtifactStore from "../src/artifacts/S3ArtifactStore.js"
import { withMultipartUploadListing } from "./support/S3rverUploads.js"

/** A deterministic body of `size` bytes, produced in 64 KiB chunks (never held whole by the store). */
const bytesOf = (size: number, seed = 1): Buffer => {
  const out = Buffer.alloc(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}
async function* chunks(bytes: Buffer, failAfter?: number) {
  for (let at = 0; at < bytes.length; at += 65_536) {
    if (failAfter !== undefined && at >= failAfter) throw new Error("client went away")
    yield bytes.subarray(at, at + 65_536)
  }
}
const readAll = async (source: AsyncIterable<Uint8Array>) => {
  const parts: Array<Buffer> = []
  for await (const part of source) parts.push(Buffer.from(part))
  return Buffer.concat(parts)
}

/** A store on a new location (folder, bucket), with what a test needs to look at that location. */
interface Location {
  readonly store: Ports.ArtifactStore["Service"]
  /** Everything the location holds (artifacts, unfinished uploads). */
  readonly leftovers: () => Promise<number>
  /** Uploads begun and not finished (temporary files, incomplete multipart uploads). */
  readonly unfinished: () => Promise<number>
  /** Leaves an unfinished upload behind, as a process killed midway does. */
  readonly abandon: () => Promise<void>
  /** Another store starting on the same location (a restart, or another process sharing it). */
  readonly start: (options: FileArtifactStore.LeftoverOptions) => Effect.Effect<Ports.ArtifactStore["Service"], Errors.StorageUnavailable>
}

export const artifactStoreContract = (name: string, make: () => Effect.Effect<Location, Errors.StorageUnavailable>) =>
  describe(`artifact store contract: ${name}`, () => {
    it.effect("a multi-megabyte artifact's bytes, size and SHA-256 round-trip exactly; ranges read exactly; delete is final", () =>
      Effect.gen(function*() {
        const { store } = yield* make()
        const bytes = bytesOf(5 * 1024 * 1024 + 123)
        const stored = yield* store.put(chunks(bytes), 10 * 1024 * 1024)
        expect(stored.size).toBe(bytes.length)
        expect(stored.sha256).toBe(createHash("sha256").update(bytes).digest("hex"))
        const whole = yield* Effect.promise(async () => readAll((await Effect.runPromise(store.open(stored.key)))!))
        expect(whole.equals(bytes)).toBe(true)
        for (const [start, end] of [[0, 0], [bytes.length - 1, bytes.length - 1], [100, 200_000], [bytes.length - 500, bytes.length - 1]] as const) {
          const part = yield* store.open(stored.key, { start, end })
          const got = yield* Effect.promise(() => readAll(part!))
          expect([got.length, got.equals(bytes.subarray(start, end + 1))], `${start}-${end}`).toEqual([end - start + 1, true])
        }
        yield* store.delete(stored.key)
        expect(yield* store.open(stored.key)).toBeUndefined()
        expect(yield* store.open("no-such-key")).toBeUndefined()
      }), { timeout: 60_000 })

    it.effect("an upload over the limit, or whose source fails midway, leaves nothing", () =>
      Effect.gen(function*() {
        const { store, leftovers } = yield* make()
        const bytes = bytesOf(1024 * 1024)
        const tooLarge = yield* Effect.exit(store.put(chunks(bytes), 1024 * 1024 - 1))
        expect(Exit.isFailure(tooLarge) && tooLarge.cause.reasons[0]?._tag === "Fail" && tooLarge.cause.reasons[0].error).toBeInstanceOf(Ports.ArtifactTooLarge)
        const cut = yield* Effect.exit(store.put(chunks(bytes, 300_000), 10 * 1024 * 1024))
        expect(Exit.isFailure(cut)).toBe(true)
        expect(yield* Effect.promise(leftovers)).toBe(0)
        const exact = yield* store.put(chunks(bytes), 1024 * 1024)
        expect(exact.size).toBe(bytes.length)
        expect(yield* Effect.promise(leftovers)).toBe(1)
      }))

    it.effect("a store starting once the longest upload has passed removes what a crash left unfinished, never an upload in progress", () =>
      Effect.gen(function*() {
        const { store, leftovers, unfinished, abandon, start } = yield* make()
        const longestUpload = 60_000
        yield* TestClock.setTime(Date.now())
        yield* Effect.promise(abandon)
        // An upload in progress: 6 MiB are in (more than one 5 MiB part: an S3 multipart upload has begun), then it waits.
        const bytes = bytesOf(7 * 1024 * 1024, 9)
        let go!: () => void
        const resumed = new Promise<void>((resolve) => (go = resolve))
        async function* paused() {
          yield* chunks(bytes.subarray(0, 6 * 1024 * 1024))
          await resumed
          yield* chunks(bytes.subarray(6 * 1024 * 1024))
        }
        const inProgress = yield* Effect.forkChild(store.put(paused(), 10 * 1024 * 1024))
        yield* Effect.promise(() => eventually(async () => expect(await unfinished()).toBe(2)))
        // A restart (or another process) within the bound: neither is older than the longest upload, both are kept.
        yield* start({ leftoverAfterMillis: longestUpload })
        expect(yield* Effect.promise(unfinished)).toBe(2)
        go()
        const stored = yield* Fiber.join(inProgress)
        expect(stored.sha256).toBe(createHash("sha256").update(bytes).digest("hex"))
        // Once the longest upload has passed, a start removes what the crash left; the artifact stays whole.
        yield* TestClock.setTime(Date.now() + 2 * longestUpload)
        yield* start({ leftoverAfterMillis: longestUpload })
        expect(yield* Effect.promise(unfinished)).toBe(0)
        expect(yield* Effect.promise(leftovers)).toBe(1)
        const whole = yield* Effect.promise(async () => readAll((await Effect.runPromise(store.open(stored.key)))!))
        expect(whole.equals(bytes)).toBe(true)
      }), { timeout: 60_000 })
  })

const folder = () => mkdtempSync(path.join(tmpdir(), "lm-artifacts-"))

artifactStoreContract("folder", () =>
  Effect.gen(function*() {
    const dir = path.join(folder(), "artifacts")
    const store = yield* FileArtifactStore.make(dir)
    return {
      store,
      leftovers: async () => readdirSync(dir).length,
      unfinished: async () => readdirSync(dir).filter((name) => name.startsWith(".upload-")).length,
      abandon: async () => writeFileSync(path.join(dir, `.upload-${randomUUID()}`), bytesOf(100_000), { mode: 0o600 }),
      start: (options) => FileArtifactStore.make(dir, options)
    }
  }))

// A real S3-compatible server (s3rver) on loopback, started here; each case gets a bucket of its own.
let s3: S3rver
let endpoint = ""
let buckets = 0
beforeAll(async () => {
  const directory = folder()
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory })
  withMultipartUploadListing(s3, directory)
  const address = await s3.run()
  endpoint = `http://127.0.0.1:${address.port}`
})
afterAll(() => s3?.close())

const s3Client = {
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  // s3rver predates the SDK's default CRC checksums (aws-chunked bodies): checksums only where S3 requires them.
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED"
} as const

artifactStoreContract("S3-compatible (s3rver)", () =>
  Effect.gen(function*() {
    const bucket = `lm-artifacts-${++buckets}`
    const client = new S3Client({ ...s3Client, endpoint })
    yield* Effect.promise(() => client.send(new CreateBucketCommand({ Bucket: bucket })))
    const scope = yield* Scope.make()
    const start = (options: FileArtifactStore.LeftoverOptions) =>
      S3ArtifactStore.make({ bucket, prefix: "artifacts/", client: { ...s3Client, endpoint }, ...options }).pipe(Scope.provide(scope))
    const unfinished = async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0
    return {
      store: yield* start({}),
      leftovers: async () => ((await client.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount ?? 0) + await unfinished(),
      unfinished,
      abandon: async () => {
        const key = `artifacts/${randomUUID()}`
        const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
        await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: bytesOf(100_000) }))
      },
      start
    }
  }))

describe("folder artifact store", () => {
  it.effect("keeps the folder 0700 and its files 0600", () =>
    Effect.gen(function*() {
      const dir = path.join(folder(), "artifacts")
      const store = yield* FileArtifactStore.make(dir)
      const stored = yield* store.put(chunks(bytesOf(1000)), 10_000)
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      expect(statSync(path.join(dir, stored.key)).mode & 0o777).toBe(0o600)
    }))
})
