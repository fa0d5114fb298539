/**
 * Handlers of the public `client` group (CONTRACT §4, §5). Each one reads the client's address from the socket
 * (or `X-Forwarded-For` behind a trusted proxy), calls one domain service, and writes its result on the wire;
 * every refusal is the domain's error mapped mechanically by `ApiErrors.fromDomain`.
 *
 * The writes (`validate`, `activate`, `deactivate`, `heartbeat`) answer through `ClientAnswers.ts`, which the
 * fast path (`FastPath.ts`) shares: this file only adds how the HttpApi request gives the client's address.
 * `validate` is the hottest route: one `Licensing.validate` (one license and machines lookup, done by the
 * domain) and one signature, nothing else. The license in its answer is built from what validation already
 * computed (derived status, seats held), not looked up again.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { HttpApiBuilder } from "effect/http-api"
import { RevocationList, Signer } from "@lm/domain"
import { SigningKey } from "@lm/domain"
import type { PublishedKey } from "@lm/domain/verify"
import { Api } from "../../api/Api.js"
import { crlCacheControl, type CrlResponse, publicKeyCacheControl, type PublicKeyResponse } from "../../api/Client.js"
import * as ApiErrors from "../../domain/ApiErrors.js"
import { iso } from "../../domain/Wire.js"
import { clientIp } from "../ClientIp.js"
import { HttpSettings } from "../Settings.js"
import { makeClientAnswers, respond } from "./ClientAnswers.js"

/**
 * Whether an `If-None-Match` header matches an entity tag: `*`, or one of its comma-separated tags compared
 * weakly (a `W/` prefix is ignored, as RFC 9110 asks for `If-None-Match`).
 */
export const etagMatches = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  const strip = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag)
  const wanted = strip(etag)
  for (const raw of ifNoneMatch.split(",")) {
    const tag = raw.trim()
    if (tag === "*" || strip(tag) === wanted) return true
  }
  return false
}

/** The `client` group's handlers. */
export const ClientHandlers = HttpApiBuilder.group(
  Api,
  "client",
  Effect.fn(function*(handlers) {
    const answers = yield* makeClientAnswers
    const revocations = yield* RevocationList
    const signer = yield* Signer
    const { trustProxyHops } = yield* HttpSettings

    const ipOf = (request: HttpServerRequest): string | null => clientIp(request, trustProxyHops) ?? null

    // `/public-key` changes only when the key ring does: its answer is built once per ring.
    let publicKeyCache: { readonly keys: ReadonlyArray<PublishedKey>; readonly response: HttpServerResponse.HttpServerResponse } | undefined
    const publicKey = Effect.gen(function*() {
      const keys = yield* signer.publishedKeys
      if (publicKeyCache?.keys === keys) return publicKeyCache.response
      const { kid, publicKey } = yield* signer.current
      const body: PublicKeyResponse = {
        public_key: SigningKey.publicKeyBase64(publicKey),
        algorithm: "Ed25519",
        kid,
        pem: SigningKey.publicKeyPem(publicKey),
        keys: keys.map((k) => ({ kid: k.kid, public_key: k.public_key, current: k.current === true }))
      }
      const response = respond(body, 200, { "cache-control": publicKeyCacheControl })
      publicKeyCache = { keys, response }
      return response
    })

    return handlers
      .handle("validate", ({ payload, request }) => answers.validate(payload, ipOf(request)))
      .handle("activate", ({ payload, request }) => answers.activate(payload, ipOf(request)))
      .handle("deactivate", ({ payload, request }) => answers.deactivate(payload, ipOf(request)))
      .handle("heartbeat", ({ payload, request }) => answers.heartbeat(payload, ipOf(request)))
      .handle("crl", ({ headers }) =>
        revocations.current.pipe(
          Effect.map((list) => {
            const cacheHeaders = { etag: list.etag, "cache-control": crlCacheControl }
            if (etagMatches(headers["if-none-match"], list.etag)) {
              return HttpServerResponse.empty({ status: 304, headers: cacheHeaders })
            }
            const body: CrlResponse = {
              crl: list.token,
              generated_at: iso(list.generatedAt),
              next_update: iso(list.nextUpdate),
              kid: list.kid
            }
            return respond(body, 200, cacheHeaders)
          }),
          Effect.mapError(ApiErrors.fromDomain)
        ))
      .handle("publicKey", () => publicKey)
      .handle("publicKeyAlias", () => publicKey)
  })
)
