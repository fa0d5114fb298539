/**
 * Releases and licensed updates (CONTRACT §9): publishing a version of a product (its artifact already in the
 * artifact store, or hosted elsewhere), listing them newest semver first, the update check (the license must
 * validate as `/validate` says, and sees only its own product's releases; a signed `download` token for the release
 * offered) and the download's checks (the token, then the license again, its current product included; every
 * download is recorded in the event log). Deleting a release removes it from lists and update checks, removes its
 * uploaded artifact from the artifact store (when one is provided), and makes its download tokens 404.
 */
import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import { ActivityRecorder } from "../activity/ActivityRecorder.js"
import { checkEntitlements } from "../licensing/entitlements.js"
import { Licensing } from "../licensing/Licensing.js"
import type { LicenseNotFound } from "../licensing/errors.js"
import type { License } from "../licensing/model.js"
import { LicenseRepository } from "../licensing/ports.js"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import { EventOutbox, type Page, Store } from "../shared/ports.js"
import { Signer } from "../signing/Signer.js"
import * as Token from "../signing/Token.js"
import {
  type DownloadTokenExpired,
  downloadTokenExpired,
  downloadTokenInvalid,
  type DownloadTokenInvalid,
  type NotEntitled,
  notEntitled,
  type ProductMismatch,
  type ReleaseExists,
  releaseExists,
  releaseNotFound,
  type ReleaseNotFound
} from "./errors.js"
import type { Release, ReleaseChannel } from "./model.js"
import { ArtifactStore, type ReleaseQuery, ReleaseRepository } from "./ports.js"
import { checkVersion, licensedProduct, pickUpdate, versionSortKey, visibleChannels } from "./release.js"

/** The fields of a release a publisher gives. */
export interface ReleaseInput {
  readonly productId: number
  readonly version: string
  readonly channel?: ReleaseChannel | undefined
  readonly changelog?: string | null | undefined
  readonly minAppVersion?: string | null | undefined
  readonly releasedAt?: number | undefined
  /** Codes a license must hold to be offered the release and to download it. */
  readonly entitlements?: ReadonlyArray<string> | null | undefined
}

/** The artifact of a release: one the artifact store holds, or one hosted at a URL. */
export type ReleaseArtifact =
  | {
    readonly _tag: "Stored"
    readonly key: string
    readonly size: number
    readonly sha256: string
    readonly filename: string
    readonly contentType: string
  }
  | {
    readonly _tag: "External"
    readonly url: string
    readonly filename?: string | null | undefined
    readonly size?: number | null | undefined
    readonly sha256?: string | null | undefined
    readonly contentType?: string | null | undefined
  }

export interface UpdateCheckInput {
  readonly licenseKey: string
  readonly version: string
  readonly productId?: number | undefined
  readonly channel?: ReleaseChannel | undefined
  readonly fingerprint?: string | null | undefined
  readonly ipAddress: string | null
}

export interface UpdateCheck {
  readonly currentVersion: string
  /** The newest version the request's channel sees for the product; undefined when it sees no release. */
  readonly latestVersion: string | undefined
  /** The release offered, or undefined when the client is up to date. */
  readonly release: Release | undefined
  /** A signed `download` token for it (undefined with no release). */
  readonly token: string | undefined
  readonly tokenExpiresAt: number | undefined
}

export interface ReleasesOptions {
  /** Seconds a download token stays valid (`LM_DOWNLOAD_TOKEN_TTL`, default 300). */
  readonly downloadTokenTtlSeconds?: number | undefined
}

const SHA256_HEX = /^[0-9a-f]{64}$/

export class Releases extends Context.Service<Releases, {
  /** The checked input of a release, refused before anything is uploaded when its version is taken. */
  readonly prepare: (input: ReleaseInput) => Effect.Effect<void, InvalidParam | ReleaseExists | StorageUnavailable>
  readonly publish: (
    input: ReleaseInput,
    artifact: ReleaseArtifact
  ) => Effect.Effect<Release, InvalidParam | ReleaseExists | StorageUnavailable>
  readonly get: (id: number) => Effect.Effect<Release, ReleaseNotFound | StorageUnavailable>
  /**
   * Deletes a release with its `release.deleted` event; then removes its uploaded artifact from the artifact store
   * (a failure there is logged: the release is gone either way). Returns the deleted release.
   */
  readonly delete: (id: number) => Effect.Effect<Release, ReleaseNotFound | StorageUnavailable>
  readonly list: (query: ReleaseQuery) => Effect.Effect<Page<Release>, StorageUnavailable>
  readonly checkUpdate: (
    input: UpdateCheckInput
  ) => Effect.Effect<UpdateCheck, InvalidParam | LicenseNotFound | NotEntitled | ProductMismatch | StorageUnavailable>
  /**
   * What a download token entitles to: verifies it (`download_token_invalid` / `_expired`), re-checks its
   * license (it must validate and still be for the release's product), and records the download in the event log.
   */
  readonly authorizeDownload: (
    token: string,
    ipAddress: string | null
  ) => Effect.Effect<
    Release,
    DownloadTokenInvalid | DownloadTokenExpired | ReleaseNotFound | NotEntitled | ProductMismatch | StorageUnavailable
  >
}>()("@lm/domain/Releases") {
  static readonly layer = (options: ReleasesOptions = {}) =>
    Layer.effect(
      Releases,
      Effect.gen(function*() {
        const store = yield* Store
        const releases = yield* ReleaseRepository
        const licenses = yield* LicenseRepository
        const outbox = yield* EventOutbox
        const signer = yield* Signer
        const licensing = yield* Licensing
        const recorder = yield* ActivityRecorder
        const ttlSeconds = options.downloadTokenTtlSeconds ?? Token.DOWNLOAD_TTL_SECONDS

        const checked = Effect.fnUntraced(function*(input: ReleaseInput) {
          if (!Number.isSafeInteger(input.productId) || input.productId < 1) {
            return yield* invalidParam("product_id", "must be a positive integer")
          }
          const version = yield* Effect.fromResult(checkVersion("version", input.version))
          if (input.minAppVersion != null) yield* Effect.fromResult(checkVersion("min_app_version", input.minAppVersion))
          const entitlements = yield* Effect.fromResult(checkEntitlements("entitlements", input.entitlements ?? []))
          return { version, entitlements }
        })

        const prepare = Effect.fn("Releases.prepare")(function*(input: ReleaseInput) {
          yield* checked(input)
          if ((yield* releases.findByVersion(input.productId, input.version)) !== undefined) return yield* releaseExists()
        })

        const publish = Effect.fn("Releases.publish")(function*(input: ReleaseInput, artifact: ReleaseArtifact) {
          const { entitlements, version } = yield* checked(input)
          if (artifact._tag === "External") {
            if (artifact.sha256 != null && !SHA256_HEX.test(artifact.sha256)) {
              return yield* invalidParam("sha256", "must be 64 lowercase hex digits")
            }
            if (artifact.size != null && (!Number.isSafeInteger(artifact.size) || artifact.size < 0)) {
              return yield* invalidParam("size", "must be a non-negative integer")
            }
          }
          const now = yield* Clock.currentTimeMillis
          const stored = artifact._tag === "Stored"
          return yield* store.transaction(
            Effect.gen(function*() {
              const release = yield* releases.insert({
                productId: input.productId,
                version: input.version,
                versionKey: versionSortKey(version),
                channel: input.channel ?? "stable",
                changelog: input.changelog ?? null,
                minAppVersion: input.minAppVersion ?? null,
                filename: (stored ? artifact.filename : artifact.filename) ?? null,
                size: (stored ? artifact.size : artifact.size) ?? null,
                sha256: (stored ? artifact.sha256 : artifact.sha256) ?? null,
                contentType: (stored ? artifact.contentType : artifact.contentType) ?? null,
                artifactUrl: stored ? null : artifact.url,
                artifactKey: stored ? artifact.key : null,
                releasedAt: input.releasedAt ?? now,
                createdAt: now,
                entitlements
              })
              yield* outbox.append([{
                type: "release.published",
                occurredAt: now,
                licenseId: null,
                machineId: null,
                data: { release_id: release.id, product_id: release.productId, version: release.version, channel: release.channel }
              }])
              return release
            })
          )
        })

        const get = Effect.fn("Releases.get")(function*(id: number) {
          const release = yield* releases.findById(id)
          if (release === undefined) return yield* releaseNotFound()
          return release
        })

        const remove = Effect.fn("Releases.delete")(function*(id: number) {
          const now = yield* Clock.currentTimeMillis
          const release = yield* store.transaction(
            Effect.gen(function*() {
              const found = yield* releases.findById(id)
              if (found === undefined || !(yield* releases.delete(id))) return yield* releaseNotFound()
              yield* outbox.append([{
                type: "release.deleted",
                occurredAt: now,
                licenseId: null,
                machineId: null,
                data: { release_id: found.id, product_id: found.productId, version: found.version, channel: found.channel }
              }])
              return found
            })
          )
          // After the commit: a release whose deletion rolled back keeps its artifact.
          const artifacts = yield* Effect.serviceOption(ArtifactStore)
          if (release.artifactKey !== null && Option.isSome(artifacts)) {
            yield* artifacts.value.delete(release.artifactKey).pipe(
              Effect.catch((error) => Effect.logWarning(`release ${release.id}: its artifact could not be removed`, error))
            )
          }
          return release
        })

        /** Refuses a license that does not validate, with validation's code. */
        const entitled = (
          result: { readonly validation: { readonly valid: boolean; readonly code: string; readonly missing: ReadonlyArray<string> } }
        ) => result.validation.valid ? Effect.void : Effect.fail(notEntitled(result.validation.code, result.validation.missing))

        const checkUpdate = Effect.fn("Releases.checkUpdate")(function*(input: UpdateCheckInput) {
          const current = yield* Effect.fromResult(checkVersion("version", input.version))
          const result = yield* licensing.validate({
            licenseKey: input.licenseKey,
            fingerprint: input.fingerprint ?? null,
            appVersion: input.version,
            ipAddress: input.ipAddress
          })
          yield* entitled(result)
          const license: License = result.license
          const productId = yield* Effect.fromResult(licensedProduct(license, input.productId))
          const channels = visibleChannels(input.channel ?? "stable")
          let offered: Release | undefined
          let latestVersion: string | undefined
          // Newest first, a page at a time, until a release no newer than the client's version.
          for (let page = 1;; page++) {
            const found = yield* releases.list({ productId, channels, page, perPage: 100 })
            if (page === 1) latestVersion = found.items[0]?.version
            offered = pickUpdate(found.items, current, result.validation.entitlements)
            const last = found.items.at(-1)
            if (offered !== undefined || last === undefined || found.items.length < 100) break
            if (last.versionKey <= versionSortKey(current)) break
          }
          if (offered === undefined) {
            return { currentVersion: input.version, latestVersion, release: undefined, token: undefined, tokenExpiresAt: undefined }
          }
          const claims = Token.download({ releaseId: offered.id, licenseId: license.id, issuedAt: result.now, ttlSeconds })
          return {
            currentVersion: input.version,
            latestVersion,
            release: offered,
            token: yield* signer.signToken(claims),
            tokenExpiresAt: claims.exp * 1000
          }
        })

        const authorizeDownload = Effect.fn("Releases.authorizeDownload")(function*(token: string, ipAddress: string | null) {
          const verified = yield* signer.verifyToken(token, { type: "download" })
          if (!verified.ok) {
            return yield* (verified.reason === "expired" ? Effect.fail(downloadTokenExpired()) : Effect.fail(downloadTokenInvalid()))
          }
          const { rid, lid } = verified.payload
          const release = yield* releases.findById(rid)
          // A well-signed token for a release deleted since the check.
          if (release === undefined) return yield* releaseNotFound()
          const license = yield* licenses.findById(lid)
          if (license === undefined) return yield* downloadTokenInvalid()
          // The release's codes are re-checked: `entitlements_missing` once the license no longer holds one.
          const result = yield* licensing.validate({ licenseKey: license.key, ipAddress, entitlements: release.entitlements }).pipe(
            Effect.catchTag("LicenseNotFound", () => Effect.fail(downloadTokenInvalid())),
            Effect.catchTag("InvalidParam", () => Effect.fail(downloadTokenInvalid()))
          )
          // The license as it is now: one moved to another product since the check no longer sees this release.
          const licensed = licensedProduct(license, release.productId)
          const now = yield* Clock.currentTimeMillis
          yield* recorder.record({
            kind: "download",
            licenseId: license.id,
            licenseKey: license.key,
            machineId: null,
            fingerprint: null,
            ipAddress,
            appVersion: null,
            result: !result.validation.valid
              ? result.validation.code
              : Result.isFailure(licensed)
              ? licensed.failure.code
              : `release:${release.id}`,
            at: now
          })
          yield* entitled(result)
          yield* Effect.fromResult(licensed)
          return release
        })

        return Releases.of({ prepare, publish, get, delete: remove, list: releases.list, checkUpdate, authorizeDownload })
      })
    )
}
