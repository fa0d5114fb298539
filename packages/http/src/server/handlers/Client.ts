/**
 * Handlers of the public `client` group (CONTRACT §4, §5). Each one reads the client's address from the socket
 * (or `X-Forwarded-For` behind a trusted proxy), calls one domain service, and writes its result on the wire;
 * every refusal is the domain's error mapped mechanically by `ApiErrors.fromDomain`.
 *
 * `validate` is the hottest route: one `Licensing.validate` (one license and machines lookup, done by the
 * domain) and one signature, nothing else. The license in its answer is built from what validation already
 * computed (derived status, seats held), not looked up again.
 *
 * Answers are written with {@link respond}, straight to JSON: every body is typed against its endpoint's
 * schema (`ValidateResponse`, ...), whose wire values are plain JSON (strings, numbers, null), so the schema's
 * encoding pass would only copy them; skipping it saves about 15–25 µs per validate answer (measured on this
 * machine). A schema given a non-identity encoding (e.g. a `DateTime`) must go back to returning `ok(...)`.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { HttpApiBuilder } from "effect/http-api"
import { Licensing, publicKeyBase64, publicKeyPem, RevocationList, Signer, Tokens } from "@lm/domain"
import type { PublishedKey } from "@lm/domain/verify"
import { Api } from "../../api/Api.js"
import {
  type ActivatedMachine,
  crlCacheControl,
  type CrlResponse,
  type DeactivateResponse,
  type HeartbeatResponse,
  publicKeyCacheControl,
  type PublicKeyResponse,
  type ValidateResponse
} from "../../api/Client.js"
import * as ApiErrors from "../../domain/ApiErrors.js"
import { ok } from "../../domain/Envelope.js"
import { iso, isoOrNull, licenseToWire, machineToWire } from "../../domain/Wire.js"
import { clientIp } from "../ClientIp.js"
import { HttpSettings } from "../Settings.js"

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

/** A success envelope around `data`, written as JSON with `status` (see the module comment). */
const respond = <A>(data: A, status = 200, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.jsonUnsafe(ok(data), headers === undefined ? { status } : { status, headers })

/** The `client` group's handlers. */
export const ClientHandlers = HttpApiBuilder.group(
  Api,
  "client",
  Effect.fn(function*(handlers) {
    const licensing = yield* Licensing
    const tokens = yield* Tokens
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
        public_key: publicKeyBase64(publicKey),
        algorithm: "Ed25519",
        kid,
        pem: publicKeyPem(publicKey),
        keys: keys.map((k) => ({ kid: k.kid, public_key: k.public_key, current: k.current === true }))
      }
      const response = respond(body, 200, { "cache-control": publicKeyCacheControl })
      publicKeyCache = { keys, response }
      return response
    })

    return handlers
      .handle("validate", ({ payload, request }) => {
        const fingerprint = payload.fingerprint ?? null
        const nonce = payload.nonce ?? null
        return licensing.validate({ licenseKey: payload.license_key, fingerprint, ipAddress: ipOf(request) }).pipe(
          Effect.flatMap((result) =>
            Effect.map(tokens.licensePayload(result, { fingerprint, nonce }), (signed) => {
              const { license, validation, now } = result
              const body: ValidateResponse = {
                valid: validation.valid,
                code: validation.code,
                license: licenseToWire({ license, status: validation.status, activationCount: validation.seatsHeld }),
                machine: validation.machine === null ? null : machineToWire(validation.machine),
                needs_activation: validation.needsActivation,
                signed_payload: signed,
                server_time: iso(now),
                ...(nonce === null ? {} : { nonce })
              }
              return respond(body)
            })
          ),
          Effect.mapError(ApiErrors.fromDomain)
        )
      })
      .handle("activate", ({ payload, request }) =>
        licensing.activate({
          licenseKey: payload.license_key,
          ipAddress: ipOf(request),
          facts: {
            fingerprint: payload.fingerprint,
            name: payload.name,
            hostname: payload.hostname,
            platform: payload.platform,
            appVersion: payload.app_version,
            meta: payload.meta,
            components: payload.components?.map((c) => ({ kind: c.kind, fingerprint: c.fingerprint, name: c.name ?? null }))
          }
        }).pipe(
          Effect.flatMap(({ created, license, machine, now }) =>
            Effect.map(tokens.machineCertificate(license, machine, now), (certificate) => {
              const body: ActivatedMachine = { ...machineToWire(machine), certificate }
              return respond(body, created ? 201 : 200)
            })
          ),
          Effect.mapError(ApiErrors.fromDomain)
        ))
      .handle("deactivate", ({ payload, request }) => {
        const ipAddress = ipOf(request)
        const target = payload.fingerprint !== undefined
          ? { fingerprint: payload.fingerprint }
          : payload.machine_id !== undefined
          ? { machineId: payload.machine_id }
          : undefined
        if (target === undefined) {
          const params = { fingerprint: "fingerprint or machine_id is required" }
          return Effect.fail(ApiErrors.make(400, "rest_invalid_param", "Invalid parameter(s): fingerprint.", { params }))
        }
        return licensing.deactivate({ licenseKey: payload.license_key, ipAddress, ...target }).pipe(
          Effect.map(({ machine }) => {
            const body: DeactivateResponse = { deactivated: true, machine: machineToWire(machine) }
            return respond(body)
          }),
          Effect.mapError(ApiErrors.fromDomain)
        )
      })
      .handle("heartbeat", ({ payload, request }) =>
        licensing.heartbeat({
          licenseKey: payload.license_key,
          fingerprint: payload.fingerprint,
          ipAddress: ipOf(request),
          ...(payload.app_version === undefined || payload.app_version === null ? {} : { appVersion: payload.app_version })
        }).pipe(
          Effect.flatMap((beat) =>
            Effect.map(tokens.machineCertificate(beat.license, beat.machine, beat.now), (certificate) => {
              const body: HeartbeatResponse = {
                machine: machineToWire(beat.machine),
                certificate,
                next_heartbeat_before: iso(beat.nextHeartbeatBefore),
                lease_expires_at: isoOrNull(beat.leaseExpiresAt)
              }
              return respond(body)
            })
          ),
          Effect.mapError(ApiErrors.fromDomain)
        ))
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
