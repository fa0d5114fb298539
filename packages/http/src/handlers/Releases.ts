/**
 * Handlers of the `releases` (publish, list) and `updates` (check, download) groups, on the domain's `Releases`
 * service. Publishing and the download take the raw request (`ReleaseRoutes.ts`: streamed bodies). The update
 * routes are public: the public guards (`ClientPipeline.makePublicGuard`: the rate limits per client IP and per
 * (IP, license key), an embedder's guards) run before their domain call, as on every public route. The update
 * check's `download_url` is absolute: the origin the client reached ({@link requestOrigin}) and `LM_REST_ROOT`.
 */
import { Effect } from "effect"
import { Ports, Releases } from "@lm/domain"
import { Api, ApiErrors, ok } from "@lm/api"
import { iso, listMeta, pageRequest, releaseToWire } from "@lm/api/wire"
import { clientIp, requestOrigin } from "../server/ClientIp.js"
import { makePublicGuard } from "../server/ClientPipeline.js"
import { ReleaseRoutes } from "../server/ReleaseRoutes.js"
import { errorResponse } from "../server/Responses.js"
import { apiBase, HttpSettings } from "../server/Settings.js"
import { group } from "./Group.js"

export const ReleasesHandlers = group(Api, "releases", (handlers) =>
  Effect.gen(function*() {
    const releases = yield* Releases
    const routes = yield* ReleaseRoutes
    const artifacts = yield* Ports.ArtifactStore
    return handlers
      .handleRaw("publish", ({ request }) => routes.upload(request))
      .handle("get", ({ params }) => releases.get(params.id).pipe(Effect.map((release) => ok(releaseToWire(release)))))
      .handle("delete", ({ params }) =>
        // The artifact store the uploads went to, so the domain removes the deleted release's artifact from it.
        releases.delete(params.id).pipe(
          Effect.provideService(Ports.ArtifactStore, artifacts),
          Effect.map((release) => ok({ deleted: true as const, id: release.id }))
        ))
      .handle("list", ({ query }) => {
        const page = pageRequest(query)
        return releases.list({ ...page, productId: query.product_id, channels: query.channel === undefined ? undefined : [query.channel] }).pipe(
          Effect.map((result) => ok({ releases: result.items.map(releaseToWire) }, listMeta(result.total, page.page, page.perPage)))
        )
      })
  }))

export const UpdatesHandlers = group(Api, "updates", (handlers) =>
  Effect.gen(function*() {
    const releases = yield* Releases
    const settings = yield* HttpSettings
    const guard = yield* makePublicGuard
    const routes = yield* ReleaseRoutes
    return handlers
      .handle("check", ({ query, request }) =>
        Effect.gen(function*() {
          const ip = clientIp(request, settings.trustProxyHops)
          if (guard !== undefined) {
            yield* guard({ clientIp: ip, headers: request.headers, endpoint: "update-check", licenseKey: query.license_key })
          }
          const origin = requestOrigin(request, settings.trustProxyHops)
          if (origin === undefined) {
            return yield* ApiErrors.make(400, "rest_invalid_param", "Invalid parameter: host.", {
              params: { host: "the Host header must be a host name or address with an optional port" }
            })
          }
          const check = yield* releases.checkUpdate({
            licenseKey: query.license_key,
            version: query.version,
            productId: query.product_id,
            channel: query.channel,
            fingerprint: query.fingerprint,
            ipAddress: ip ?? null
          })
          return ok({
            update_available: check.release !== undefined,
            current_version: check.currentVersion,
            latest_version: check.latestVersion ?? null,
            release: check.release === undefined ? null : releaseToWire(check.release),
            download_url: check.token === undefined
              ? null
              : `${apiBase(origin, settings)}/updates/download?token=${encodeURIComponent(check.token)}`,
            token_expires_at: check.tokenExpiresAt === undefined ? null : iso(check.tokenExpiresAt)
          })
        }).pipe(Effect.catch((error) => Effect.succeed(errorResponse(error)))))
      .handleRaw("download", ({ query, request }) => routes.download(request, query.token))
  }))
