/**
 * The release routes of the lm/v1 API that speak JSON (CONTRACT §9): the list of releases (API key) and the
 * public update check. The streamed upload (`POST /releases`, multipart or JSON) and the download
 * (`GET /updates/download`) are served beside the HttpApi (`server/ReleaseRoutes.ts`): their bodies are not
 * JSON envelopes under the 1 MiB cap.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "./Authentication.js"
import { Forbidden, NotFound } from "../domain/ApiErrors.js"
import { Success } from "../domain/Envelope.js"
import { ListMeta, PageQuery, positiveIntFromString, ReleaseWire, Time } from "../domain/Wire.js"

const channelDescription = `One of ${Model.releaseChannels.join(", ")} (most stable first).`

/** Query of GET /releases. */
export const ListReleasesQuery = Schema.Struct({
  ...PageQuery,
  product_id: Schema.optionalKey(positiveIntFromString("Only this product's releases.")),
  channel: Schema.optionalKey(Model.ReleaseChannel.annotate({ description: `Only this channel. ${channelDescription}` }))
})

/** Query of GET /updates/check. */
export const UpdateCheckQuery = Schema.Struct({
  license_key: Schema.String.annotate({ description: "The license key." }),
  version: Schema.String.annotate({ description: "The client's version (strict semver)." }),
  product_id: Schema.optionalKey(positiveIntFromString("The product (default: the license's).")),
  channel: Schema.optionalKey(Model.ReleaseChannel.annotate({
    description: `The client's channel (default stable); it also sees the more stable ones. ${channelDescription}`
  })),
  fingerprint: Schema.optionalKey(Schema.String.annotate({ description: "The device: it must be activated on the license." }))
})

/** The answer of GET /updates/check. */
export const UpdateCheckResponse = Schema.Struct({
  update_available: Schema.Boolean,
  current_version: Schema.String,
  latest_version: Schema.NullOr(Schema.String),
  release: Schema.NullOr(ReleaseWire),
  download_url: Schema.NullOr(Schema.String).annotate({
    description: "Absolute URL of `GET /updates/download` with a signed `download` token (null with no update)."
  }),
  token_expires_at: Schema.NullOr(Time)
})
export type UpdateCheckResponse = typeof UpdateCheckResponse.Type

/** GET /releases (API key). */
export class ReleasesGroup extends HttpApiGroup.make("releases")
  .add(
    HttpApiEndpoint.get("list", "/releases", {
      query: ListReleasesQuery,
      success: Success(Schema.Struct({ releases: Schema.Array(ReleaseWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List releases",
      description: "Newest semver first (a pre-release below its release, numeric identifiers by number), then newest " +
        "id. Publish with `POST /releases`: `multipart/form-data` with the fields (`product_id`, `version`, `channel`, " +
        "`changelog`, `min_app_version`, `released_at`) before a `file` part streamed to the artifact store (at most " +
        "`LM_MAX_ARTIFACT_BYTES`, else 413 and nothing kept), or JSON with `artifact_url` for an external artifact; " +
        "201 with the release, 409 `release_exists` for the same product and version."
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Releases", description: "Published versions of products (API key required)." }))
{}

/** GET /updates/check (public). */
export class UpdatesGroup extends HttpApiGroup.make("updates")
  .add(
    HttpApiEndpoint.get("check", "/updates/check", {
      query: UpdateCheckQuery,
      success: Success(UpdateCheckResponse),
      error: [Forbidden, NotFound]
    }).annotateMerge(OpenApi.annotations({
      summary: "Check for an update",
      description: "The license must validate as `/validate` says (403 with its code otherwise); another product than " +
        "the license's is 403 `product_mismatch`. Offers the newest release newer than `version` in the channel or a " +
        "more stable one whose `min_app_version` is at most `version`, with a `download_url` holding a signed " +
        "`download` token (TTL `LM_DOWNLOAD_TOKEN_TTL`, default 300 s). `GET /updates/download?token=…` streams it " +
        "(Content-Length, Content-Disposition, ETag = its SHA-256, single Range requests 206/416, If-None-Match, " +
        "If-Range, HEAD) after checking the license again, or redirects (302) to an external artifact; a bad token " +
        "is 403 `download_token_invalid`, an expired one 403 `download_token_expired`."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "Updates", description: "Licensed update checks (public)." }))
{}
