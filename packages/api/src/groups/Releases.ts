/**
 * The release routes of the lm/v1 API (CONTRACT §9): publishing (API key), the list of releases (API key), the
 * public update check and the public download. The upload (`POST /releases`, multipart streamed to the artifact
 * store, or JSON) and the download (a streamed artifact) are declared here like every route, for the OpenAPI
 * document, CORS and the guards; their handlers take the raw request (`server/ReleaseRoutes.ts`), because
 * neither body is a JSON envelope under the 1 MiB cap.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { Multipart } from "effect/http"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { NoFields } from "./Licenses.js"
import { StreamedBody } from "../middleware/ErrorEnvelope.js"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, RangeNotSatisfiable, RequestTimeout, TooManyRequests, UnsupportedMediaType } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { EntitlementCodes, ListMeta, PageQuery, positiveIntFromString, ReleaseWire, Time } from "../wire/Wire.js"

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

/** The release fields of both bodies of `POST /releases`. */
export const releaseFields = {
  version: Schema.String.annotate({ description: "Strict semver, e.g. `1.4.0` or `2.0.0-rc.1`; one release per product and version." }),
  channel: Schema.optionalKey(Model.ReleaseChannel.annotate({ description: `Default stable. ${channelDescription}` })),
  changelog: Schema.optionalKey(Schema.NullOr(Schema.String)),
  min_app_version: Schema.optionalKey(Schema.NullOr(Schema.String).annotate({
    description: "The oldest client version that may install it (strict semver)."
  })),
  released_at: Schema.optionalKey(Schema.String.annotate({ description: "ISO 8601 time (default: now)." })),
  entitlements: Schema.optionalKey(Schema.NullOr(EntitlementCodes).annotate({
    description: "Codes a license must hold to be offered the release by an update check and to download it " +
      "(403 `entitlements_missing` with `data.missing`); at most 64. In a multipart form: one comma-separated field."
  }))
}

/** `multipart/form-data` body of `POST /releases`: the fields and the `file` part (streamed, never buffered). */
export const ReleaseUploadForm = Schema.Struct({
  product_id: Schema.String.annotate({ description: "The product (a positive integer)." }),
  ...releaseFields,
  file: Multipart.PersistedFileSchema.annotate({
    description: "The artifact, before or after the fields: at most `LM_MAX_ARTIFACT_BYTES` (default 512 MiB), else 413 and nothing kept."
  })
}).pipe(HttpApiSchema.asMultipartStream())

/** JSON body of `POST /releases`: an artifact hosted elsewhere (downloads are redirected to it). */
export const ExternalReleasePayload = Schema.Struct({
  product_id: Schema.Int,
  ...releaseFields,
  artifact_url: Schema.String.annotate({ description: "An http or https URL." }),
  filename: Schema.optionalKey(Schema.NullOr(Schema.String)),
  size: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  sha256: Schema.optionalKey(Schema.NullOr(Schema.String)),
  content_type: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/** Query of GET /updates/download. */
export const DownloadQuery = Schema.Struct({
  token: Schema.optionalKey(Schema.String.annotate({
    description: "The signed `download` token of `GET /updates/check`'s `download_url` (missing or bad: 403 `download_token_invalid`)."
  }))
})

/** The artifact's bytes, streamed (200). */
const ArtifactBytes = HttpApiSchema.StreamUint8Array()

/** One range of the artifact's bytes (206), streamed like the whole (an endpoint declares one stream response). */
const ArtifactRange = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array(), HttpApiSchema.status(206)).annotate({
  description: "One range of the artifact, with `Content-Range`."
})

/** The path of one release. */
const releaseIdParam = { id: positiveIntFromString("The release's id (a positive integer).") }

/** POST, GET and DELETE of releases (API key). */
export class ReleasesGroup extends HttpApiGroup.make("releases")
  .add(
    HttpApiEndpoint.post("publish", "/releases", {
      payload: [ReleaseUploadForm, ExternalReleasePayload],
      success: Success(ReleaseWire).pipe(HttpApiSchema.status(201)),
      error: [BadRequest, RequestTimeout, Conflict, PayloadTooLarge, UnsupportedMediaType]
    }).annotate(StreamedBody, true).annotateMerge(OpenApi.annotations({
      summary: "Publish a release",
      description: "`multipart/form-data`: the fields (before or after the `file` part; an unknown `channel` is 400 " +
        "naming the allowed ones) and one `file` part, which streams to the artifact store " +
        "while its SHA-256 and size are computed (at most `LM_MAX_ARTIFACT_BYTES`, else 413 `rest_payload_too_large` " +
        "as soon as the limit is crossed, and nothing is kept). The upload is not bound by the body timeout: it is cut " +
        "off (408 `rest_request_timeout`, nothing kept) when no byte arrives for `LM_UPLOAD_IDLE_TIMEOUT_SECONDS` " +
        "(default 30) or when it takes longer than `LM_UPLOAD_TIMEOUT_SECONDS` in all (default 10,800: 3 h). " +
        "Or JSON (1 MiB cap) with `artifact_url` for an artifact " +
        "hosted elsewhere. Anything else is 415. A form that ends early or breaks the multipart grammar is 400 " +
        "`rest_invalid_param` naming `body` (nothing kept); the text fields take at most 1 MiB in all, as a JSON " +
        "body (past it, 400 naming the field). 409 `release_exists` for the same product and version; " +
        "`release.published` goes to the outbox."
    }))
  )
  .add(
    HttpApiEndpoint.get("list", "/releases", {
      query: ListReleasesQuery,
      success: Success(Schema.Struct({ releases: Schema.Array(ReleaseWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List releases",
      description: "Newest semver first (a pre-release below its release, numeric identifiers by number), then newest " +
        "id. Publish with `POST /releases`."
    })),
    HttpApiEndpoint.get("get", "/releases/:id", {
      params: releaseIdParam,
      success: Success(ReleaseWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a release", description: "Unknown id: 404 `release_not_found`." })),
    HttpApiEndpoint.delete("delete", "/releases/:id", {
      params: releaseIdParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Delete a release",
      description: "The release is gone from lists and update checks, its uploaded artifact is removed from the " +
        "artifact store, and a download token issued for it gets 404 `release_not_found`; `release.deleted` goes to " +
        "the outbox. Unknown id: 404 `release_not_found`."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Releases", description: "Published versions of products (API key required)." }))
{}

/** GET /updates/check and GET /updates/download (public). */
export class UpdatesGroup extends HttpApiGroup.make("updates")
  .add(
    HttpApiEndpoint.get("check", "/updates/check", {
      query: UpdateCheckQuery,
      success: Success(UpdateCheckResponse),
      error: [Forbidden, NotFound, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Check for an update",
      description: "The license must validate as `/validate` says (403 with its code otherwise); another product " +
        "than the license's, or any for a license that names no product, is 403 `product_mismatch`. Offers the " +
        "newest release newer than `version` in the channel or a more stable one whose `min_app_version` is at " +
        "most `version`, with a `download_url` holding a signed `download` token (TTL `LM_DOWNLOAD_TOKEN_TTL`, " +
        "default 300 s). `GET /updates/download?token=…` streams it (Content-Length, Content-Disposition, ETag = " +
        "its SHA-256, single Range requests 206/416, If-None-Match, If-Range, HEAD) after checking the license " +
        "again, or redirects (302) to an external artifact; a bad token is 403 `download_token_invalid`, an " +
        "expired one 403 `download_token_expired`. Rate limited per client IP and per (IP, license key) like every " +
        "public route (429 `rest_rate_limited` with `Retry-After`)."
    }))
  )
  .add(
    HttpApiEndpoint.get("download", "/updates/download", {
      query: DownloadQuery,
      success: [
        ArtifactBytes,
        ArtifactRange,
        HttpApiSchema.Empty(302).annotate({ description: "An external artifact: `Location` is its URL." }),
        HttpApiSchema.Empty(304).annotate({ description: "`If-None-Match` names the artifact's ETag." })
      ],
      error: [Forbidden, NotFound, RangeNotSatisfiable, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Download a release's artifact",
      description: "Checks the token (403 `download_token_invalid`, `download_token_expired`) and the license " +
        "again (a license revoked after the check: 403 with its code; one moved to another product since, or left " +
        "with none: 403 `product_mismatch`), then streams the artifact with `Content-Length`, " +
        "`Content-Disposition` (the uploaded name), `ETag` (its SHA-256), `Accept-Ranges: bytes`; `HEAD` sends the " +
        "headers only. One `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) gives 206 with `Content-Range`, a range " +
        "starting past the end 416 `rest_range_not_satisfiable`; `If-None-Match` with the ETag gives 304; " +
        "`If-Range` with another ETag sends the whole artifact. An external artifact is a 302 to its URL. Every " +
        "download is written to the event log (kind `download`). Rate limited per client IP (429 `rest_rate_limited` " +
        "with `Retry-After`)."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "Updates", description: "Licensed update checks (public)." }))
{}
