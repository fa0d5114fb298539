/** The releases feature's records: releases of a product and their channels, and the event publishing one causes. */
import { Schema } from "effect"
import { Entitlements } from "../licensing/model.js"
import { Id, Millis } from "../shared/model.js"

/**
 * Release channels, most stable first (CONTRACT §9). A client on a channel also sees the more stable ones (those
 * before it here).
 */
export const releaseChannels = ["stable", "rc", "beta", "alpha", "dev"] as const
export const ReleaseChannel = Schema.Literals(releaseChannels)
export type ReleaseChannel = typeof ReleaseChannel.Type

/** A published version of a product, with its artifact (uploaded to the artifact store, or hosted elsewhere). */
export const Release = Schema.Struct({
  id: Id,
  productId: Id,
  /** Strict semver, as given. */
  version: Schema.String,
  /**
   * A text whose byte order is semver precedence (see `release.ts`, `versionSortKey`). Kept by the domain on
   * every write; stores order by it (byte-wise) and never parse versions.
   */
  versionKey: Schema.String,
  channel: ReleaseChannel,
  changelog: Schema.NullOr(Schema.String),
  minAppVersion: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  size: Schema.NullOr(Schema.Number),
  /** Lowercase hex SHA-256 of the artifact's bytes (null for an external artifact not described). */
  sha256: Schema.NullOr(Schema.String),
  contentType: Schema.NullOr(Schema.String),
  /** Where an external artifact is hosted; null for an uploaded one. */
  artifactUrl: Schema.NullOr(Schema.String),
  /** The artifact store's key of an uploaded artifact; null for an external one. */
  artifactKey: Schema.NullOr(Schema.String),
  releasedAt: Millis,
  createdAt: Millis,
  /** Entitlement codes a license must hold to be offered it and to download it (CONTRACT §15), sorted. */
  entitlements: Entitlements
})
export type Release = typeof Release.Type
export type ReleaseDraft = Omit<Release, "id">

/** Names of the release events of CONTRACT §11. */
export const releaseEventTypes = ["release.published", "release.deleted"] as const
export type ReleaseEventType = (typeof releaseEventTypes)[number]
