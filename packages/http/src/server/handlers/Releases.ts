/**
 * Handlers of the `releases` (list) and `updates` (check) groups, on the domain's `Releases` service. The update
 * check's `download_url` is absolute: the request's own origin (HTTPS when it came over TLS, or per
 * `X-Forwarded-Proto` behind a trusted proxy) and `LM_REST_ROOT`.
 */
import type { TLSSocket } from "node:tls"
import { Effect } from "effect"
import { Releases } from "@lm/domain"
import { HttpApiBuilder } from "effect/http-api"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { Api } from "../../api/Api.js"
import * as ApiErrors from "../../domain/ApiErrors.js"
import { ok } from "../../domain/Envelope.js"
import { iso, listMeta, pageRequest, releaseToWire } from "../../domain/Wire.js"
import { clientIp, forwardedHttps } from "../ClientIp.js"
import { apiBase, HttpSettings } from "../Settings.js"

/** The origin the client reached: scheme and `Host`. */
export const requestOrigin = (request: HttpServerRequest, trustProxyHops: number): string => {
  const source = request.source as { readonly socket?: Partial<TLSSocket> }
  const https = source.socket?.encrypted === true || forwardedHttps(request.headers["x-forwarded-proto"], trustProxyHops)
  return `${https ? "https" : "http"}://${request.headers.host ?? "localhost"}`
}

export const ReleasesHandlers = HttpApiBuilder.group(Api, "releases", (handlers) =>
  Effect.gen(function*() {
    const releases = yield* Releases
    return handlers.handle("list", ({ query }) => {
      const page = pageRequest(query)
      return releases.list({ ...page, productId: query.product_id, channels: query.channel === undefined ? undefined : [query.channel] }).pipe(
        Effect.map((result) => ok({ releases: result.items.map(releaseToWire) }, listMeta(result.total, page.page, page.perPage))),
        Effect.mapError(ApiErrors.fromDomain)
      )
    })
  }))

export const UpdatesHandlers = HttpApiBuilder.group(Api, "updates", (handlers) =>
  Effect.gen(function*() {
    const releases = yield* Releases
    const settings = yield* HttpSettings
    return handlers.handle("check", ({ query, request }) =>
      releases.checkUpdate({
        licenseKey: query.license_key,
        version: query.version,
        productId: query.product_id,
        channel: query.channel,
        fingerprint: query.fingerprint,
        ipAddress: clientIp(request, settings.trustProxyHops) ?? null
      }).pipe(
        Effect.map((check) =>
          ok({
            update_available: check.release !== undefined,
            current_version: check.currentVersion,
            latest_version: check.release?.version ?? null,
            release: check.release === undefined ? null : releaseToWire(check.release),
            download_url: check.token === undefined
              ? null
              : `${apiBase(requestOrigin(request, settings.trustProxyHops), settings)}/updates/download?token=${encodeURIComponent(check.token)}`,
            token_expires_at: check.tokenExpiresAt === undefined ? null : iso(check.tokenExpiresAt)
          })
        ),
        Effect.mapError(ApiErrors.fromDomain)
      ))
  }))
