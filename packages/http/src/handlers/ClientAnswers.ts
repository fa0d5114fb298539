/**
 * The answers of the public client routes (`validate`, `activate`, `deactivate`, `heartbeat`, `crl`,
 * `public-key`; CONTRACT §4, §5): one domain call, whose answer is already signed (the license or refusal token,
 * the machine certificate), encoded as the HTTP response, from the endpoint's decoded input and the client's
 * address; a refusal is the domain's error, which the pipeline answers with its envelope. They are
 * the last step of the client pipeline (`ClientPipeline.ts`), which both ways a request arrives go through: the
 * `client` group's HttpApi handlers (`Client.ts`) and the fast path in front of the Effect stack
 * (`FastPath.ts`). Nothing here reads the request.
 *
 * `validate` is the hottest route: one `Licensing.validate` (one license and machines lookup and one signature,
 * done by the domain), nothing else. The license in its answer is built from what validation already
 * computed (derived status, seats held), not looked up again.
 *
 * Answers are written with {@link respond}, straight to JSON: every body is typed against its endpoint's
 * schema (`ValidateResponse`, ...), whose wire values are plain JSON (strings, numbers, null), so the schema's
 * encoding pass would only copy them; skipping it saves about 15–25 µs per validate answer (measured on this
 * machine). A schema given a non-identity encoding (e.g. a `DateTime`) must go back to returning `ok(...)`.
 */
import { type Context, Effect } from "effect"
import { identity } from "effect/Function"
import { HttpServerResponse } from "effect/http"
import { Errors, Licensing, type Model, RevocationList, type Services, Signer, SigningKey, type Validation } from "@lm/domain"
import type { PublishedKey } from "@lm/domain/verify"
import {
  type ActivatedMachine,
  type ActivatePayload,
  crlCacheControl,
  type CrlResponse,
  type DeactivatePayload,
  type DeactivateResponse,
  type HeartbeatPayload,
  type HeartbeatResponse,
  ok,
  publicKeyCacheControl,
  type PublicKeyResponse,
  type ValidatePayload,
  type ValidateResponse
} from "@lm/api"
import { iso, isoNow, isoOrNull, type LicenseWire, licenseToWire, machineToWire } from "@lm/api/wire"
import { ifNoneMatchMatches } from "../server/EntityTags.js"

/** A success envelope around `data`, written as JSON with `status` (see the module comment). */
export const respond = <A>(data: A, status = 200, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.jsonUnsafe(ok(data), headers === undefined ? { status } : { status, headers })

/*
 * The translations both namespaces share (lm/v1 here, WPLM in `WplmAnswers.ts`): an endpoint's decoded payload as
 * the domain call's input, and the domain's validation as validate's answer.
 */

/** What `Licensing.validate` is asked for a decoded validate payload. */
export const validateInput = (payload: typeof ValidatePayload.Type, ipAddress: string | null): Services.ValidateInput => ({
  licenseKey: payload.license_key,
  fingerprint: payload.fingerprint ?? null,
  nonce: payload.nonce ?? null,
  ipAddress,
  entitlements: payload.entitlements ?? undefined
})

/**
 * Validate's answer: the license built from what validation computed, the signed tokens, the nonce sent back;
 * license and machine written in the namespace's shapes.
 */
export const validateAnswer = <L, M>(
  { license, now, signedPayload, signedRefusal, validation }: Services.ValidateResult,
  nonce: string | number | null,
  licenseShape: (license: LicenseWire) => L,
  machineShape: (machine: Model.Machine) => M
) => ({
  valid: validation.valid,
  code: validation.code,
  license: licenseShape(licenseToWire({
    license,
    status: validation.status,
    activationCount: validation.seatsHeld,
    effectiveEntitlements: validation.entitlements
  })),
  machine: validation.machine === null ? null : machineShape(validation.machine),
  needs_activation: validation.needsActivation,
  signed_payload: signedPayload,
  signed_refusal: signedRefusal,
  server_time: isoNow(now),
  ...(nonce === null ? {} : { nonce }),
  ...(validation.code === "entitlements_missing" ? { missing: validation.missing } : {})
})

/** Validate's answer on lm/v1. */
const validateBody = (result: Services.ValidateResult, nonce: string | number | null): ValidateResponse =>
  validateAnswer(result, nonce, identity, machineToWire)

/** A license's JSON text in validate's answer, kept while its status, seat count and entitlements stay the same. */
interface LicenseText {
  readonly status: Validation.Validation["status"]
  readonly seatsHeld: number
  readonly entitlements: ReadonlyArray<string>
  readonly text: string
}

/** Per license object (the validation cache hands out the same one until the license changes). */
const licenseTexts = new WeakMap<Model.License, LicenseText>()

const licenseText = (license: Model.License, validation: Validation.Validation): string => {
  const kept = licenseTexts.get(license)
  if (
    kept !== undefined && kept.status === validation.status && kept.seatsHeld === validation.seatsHeld &&
    kept.entitlements === validation.entitlements
  ) return kept.text
  const text = JSON.stringify(licenseToWire({
    license,
    status: validation.status,
    activationCount: validation.seatsHeld,
    effectiveEntitlements: validation.entitlements
  }))
  licenseTexts.set(license, { status: validation.status, seatsHeld: validation.seatsHeld, entitlements: validation.entitlements, text })
  return text
}

/**
 * `JSON.stringify(ok(validateBody(result, nonce)))`, written around the license's kept text: the answer build and
 * its stringify were the largest part of ours in a cached validate (bench/README.md, issue 32). The fast path's
 * synchronous lane answers with it; its test compares it with the object's text.
 */
export const validateText = (result: Services.ValidateResult, nonce: string | number | null): string => {
  const { validation } = result
  let text = `{"success":true,"data":{"valid":${validation.valid},"code":${JSON.stringify(validation.code)},"license":${
    licenseText(result.license, validation)
  },"machine":${validation.machine === null ? "null" : JSON.stringify(machineToWire(validation.machine))},"needs_activation":${validation.needsActivation},"signed_payload":${
    JSON.stringify(result.signedPayload)
  },"signed_refusal":${JSON.stringify(result.signedRefusal)},"server_time":${JSON.stringify(isoNow(result.now))}`
  if (nonce !== null) text += `,"nonce":${JSON.stringify(nonce)}`
  if (validation.code === "entitlements_missing") text += `,"missing":${JSON.stringify(validation.missing)}`
  return `${text}},"meta":{}}`
}

/** What `Licensing.activate` is asked for a decoded activate payload. */
export const activateInput = (payload: typeof ActivatePayload.Type, ipAddress: string | null): Services.ActivateInput => ({
  licenseKey: payload.license_key,
  ipAddress,
  facts: {
    fingerprint: payload.fingerprint,
    name: payload.name,
    hostname: payload.hostname,
    platform: payload.platform,
    appVersion: payload.app_version,
    meta: payload.meta,
    components: payload.components?.map((c) => ({ kind: c.kind, fingerprint: c.fingerprint, name: c.name ?? null }))
  }
})

/** What `Licensing.deactivate` is asked: the machine by fingerprint, else by id; neither is a 400 naming the field. */
export const deactivateInput = (
  payload: typeof DeactivatePayload.Type,
  ipAddress: string | null
): Effect.Effect<Services.DeactivateInput, Errors.InvalidParam> => {
  const licenseKey = payload.license_key
  if (payload.fingerprint !== undefined) return Effect.succeed({ licenseKey, ipAddress, fingerprint: payload.fingerprint })
  if (payload.machine_id !== undefined) return Effect.succeed({ licenseKey, ipAddress, machineId: payload.machine_id })
  const params = { fingerprint: "fingerprint or machine_id is required" }
  return Effect.fail(new Errors.InvalidParam({ message: "Invalid parameter(s): fingerprint.", params }))
}

/** What `Licensing.heartbeat` is asked for a decoded heartbeat payload. */
export const heartbeatInput = (payload: typeof HeartbeatPayload.Type, ipAddress: string | null): Services.HeartbeatInput => ({
  licenseKey: payload.license_key,
  fingerprint: payload.fingerprint,
  ipAddress,
  ...(payload.app_version === undefined || payload.app_version === null ? {} : { appVersion: payload.app_version })
})

/**
 * Validate answered at once, on the caller's stack (`Licensing.validateNow`), with the services of `context`:
 * the same response as `validate`'s, or undefined (nothing done) when it must go the effectful way.
 */
export type ValidateNow = (
  payload: typeof ValidatePayload.Type,
  ipAddress: string | null,
  context: Context.Context<never>
) => HttpServerResponse.HttpServerResponse | undefined

/** {@link ValidateNow} on the engine's `Licensing`. */
export const makeValidateNow: Effect.Effect<ValidateNow, never, Licensing> = Effect.gen(function*() {
  const licensing = yield* Licensing
  return (payload, ipAddress, context) => {
    const result = licensing.validateNow(validateInput(payload, ipAddress), context)
    return result === undefined
      ? undefined
      : HttpServerResponse.text(validateText(result, payload.nonce ?? null), { status: 200, contentType: "application/json" })
  }
})

/** The decoded headers of `GET /crl`. */
export interface CrlHeaders {
  readonly "if-none-match"?: string | undefined
}

/**
 * The client routes' answers on the engine's services, by endpoint name (the `client` group's): each takes the
 * endpoint's decoded input (payload, or headers for `crl`) and the client's address and gives the response,
 * or the refusal as an envelope error.
 */
export const makeClientAnswers = Effect.gen(function*() {
  const licensing = yield* Licensing
  const revocations = yield* RevocationList
  const signer = yield* Signer

  const validate = (payload: typeof ValidatePayload.Type, ipAddress: string | null) =>
    licensing.validate(validateInput(payload, ipAddress)).pipe(Effect.map((result) => respond(validateBody(result, payload.nonce ?? null))))

  const activate = (payload: typeof ActivatePayload.Type, ipAddress: string | null) =>
    licensing.activate(activateInput(payload, ipAddress)).pipe(
      Effect.map(({ certificate, created, machine }) => {
        const body: ActivatedMachine = { ...machineToWire(machine), certificate }
        return respond(body, created ? 201 : 200)
      })
    )

  const deactivate = (payload: typeof DeactivatePayload.Type, ipAddress: string | null) =>
    Effect.flatMap(deactivateInput(payload, ipAddress), licensing.deactivate).pipe(
      Effect.map(({ machine }) => {
        const body: DeactivateResponse = { deactivated: true, machine: machineToWire(machine) }
        return respond(body)
      })
    )

  const heartbeat = (payload: typeof HeartbeatPayload.Type, ipAddress: string | null) =>
    licensing.heartbeat(heartbeatInput(payload, ipAddress)).pipe(
      Effect.map((beat) => {
        const body: HeartbeatResponse = {
          machine: machineToWire(beat.machine),
          certificate: beat.certificate,
          next_heartbeat_before: iso(beat.nextHeartbeatBefore),
          lease_expires_at: isoOrNull(beat.leaseExpiresAt)
        }
        return respond(body)
      })
    )

  const crl = (headers: CrlHeaders, _ipAddress: string | null) =>
    revocations.current.pipe(
      Effect.map((list) => {
        const cacheHeaders = { etag: list.etag, "cache-control": crlCacheControl }
        if (ifNoneMatchMatches(headers["if-none-match"], list.etag)) {
          return HttpServerResponse.empty({ status: 304, headers: cacheHeaders })
        }
        const body: CrlResponse = {
          crl: list.token,
          generated_at: iso(list.generatedAt),
          next_update: iso(list.nextUpdate),
          kid: list.kid
        }
        return respond(body, 200, cacheHeaders)
      })
    )

  // `/public-key` changes only when the key ring does: its answer is built once per ring.
  let publicKeyCache: { readonly keys: ReadonlyArray<PublishedKey>; readonly response: HttpServerResponse.HttpServerResponse } | undefined
  const publicKeyAnswer = Effect.gen(function*() {
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
  const publicKey = (_input: void, _ipAddress: string | null) => publicKeyAnswer

  return { validate, activate, deactivate, heartbeat, crl, publicKey, publicKeyAlias: publicKey }
})

/** The answers of the client writes. */
export type ClientAnswers = Effect.Success<typeof makeClientAnswers>
