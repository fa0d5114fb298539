/** What the releases feature needs: the releases (a store), and where uploaded artifacts live (an artifact store). */
import { Context } from "effect"
import type { Op, Page, PageRequest } from "../shared/ports.js"
import type { ReleaseExists } from "./errors.js"
import type { Release, ReleaseChannel, ReleaseDraft } from "./model.js"

/** Filters of a release list. */
export interface ReleaseQuery extends PageRequest {
  readonly productId?: number | undefined
  /** Only releases in these channels (none when empty). */
  readonly channels?: ReadonlyArray<ReleaseChannel> | undefined
}

/** Published releases (CONTRACT §9). A product has one release per version. */
export class ReleaseRepository extends Context.Service<ReleaseRepository, {
  /** Inserts a release; `ReleaseExists` when its product already has that version. */
  readonly insert: (draft: ReleaseDraft) => Op<Release, ReleaseExists>
  readonly findById: (id: number) => Op<Release | undefined>
  /** Deletes a release; returns whether it existed. */
  readonly delete: (id: number) => Op<boolean>
  readonly findByVersion: (productId: number, version: string) => Op<Release | undefined>
  /** Newest first: by `versionKey` byte-wise, descending, then id descending. */
  readonly list: (query: ReleaseQuery) => Op<Page<Release>>
}>()("@lm/domain/ReleaseRepository") {}

/** An artifact written to the artifact store: its key there, byte count and lowercase hex SHA-256. */
export interface StoredArtifact {
  readonly key: string
  readonly size: number
  readonly sha256: string
}

/** An upload over the byte limit: nothing of it is kept. */
export class ArtifactTooLarge {
  readonly _tag = "ArtifactTooLarge"
  readonly maxBytes: number
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }
}

/**
 * Where uploaded release artifacts live (a folder, an S3-compatible bucket). Artifacts stream through: nothing
 * holds a whole one in memory. A write is all or nothing: a failed, cut off or interrupted `put` leaves nothing
 * readable behind.
 */
export class ArtifactStore extends Context.Service<ArtifactStore, {
  /** Streams `body` in, counting bytes and hashing them; fails with `ArtifactTooLarge` past `maxBytes`. */
  readonly put: (body: AsyncIterable<Uint8Array>, maxBytes: number) => Op<StoredArtifact, ArtifactTooLarge>
  /** The artifact's bytes, or the inclusive byte range `[start, end]` of them; undefined when it is gone. */
  readonly open: (
    key: string,
    range?: { readonly start: number; readonly end: number }
  ) => Op<AsyncIterable<Uint8Array> | undefined>
  readonly delete: (key: string) => Op<void>
}>()("@lm/domain/ArtifactStore") {}
