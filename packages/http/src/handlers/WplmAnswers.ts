/**
 * The answers of the WPLM compatibility namespace (CONTRACT §17, `LM_WPLM_COMPAT=1`): the public client routes at
 * `{rest_root}/wplm/v1/`, for applications shipped with the WPLM client libraries. This is the one translation
 * module: the same domain calls as lm/v1 (`ClientAnswers.ts`), their answers written in WPLM's shapes, by the
 * domain's rules (`@lm/domain` `Wplm`): integer statuses with `status_label`, integer `source`; a key not sent
 * trimmed and upper-case refused (400); validate's `signed_payload` always a license token (the `wplm` token
 * dialect); heartbeat's Machine at the top level; the CRL whose `revoked_keys` holds suspended keys too.
 * `public-key` is lm/v1's. Both transports run these through the client pipeline (`ClientPipeline.ts`).
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { Errors, Licensing, RevocationList, Wplm } from "@lm/domain"
import type { Model } from "@lm/domain"
import { crlCacheControl } from "@lm/api"
import { iso, isoOrNull, type LicenseWire, type MachineWire, machineToWire } from "@lm/api/wire"
import { ifNoneMatchMatches } from "../server/EntityTags.js"
import {
  activateInput,
  type CrlHeaders,
  deactivateInput,
  heartbeatInput,
  makeClientAnswers,
  respond,
  validateAnswer,
  validateInput
} from "./ClientAnswers.js"

/** Where the namespace is served, under `{rest_root}`. */
export const wplmPath = "/wplm/v1"

/** The namespace's routes (under `{rest_root}`): the writes by endpoint name, and the two reads. */
export const wplmRoutes = {
  validate: `${wplmPath}/validate`,
  activate: `${wplmPath}/activate`,
  deactivate: `${wplmPath}/deactivate`,
  heartbeat: `${wplmPath}/heartbeat`,
  crl: `${wplmPath}/crl`,
  publicKey: `${wplmPath}/public-key`
} as const

/** A license in WPLM's shape: integer `status` with `status_label`, integer `source`. */
export const licenseToWplm = (license: LicenseWire) => ({
  ...license,
  status: Wplm.licenseStatusCodes[license.status],
  status_label: license.status,
  source: Wplm.licenseSourceCodes[license.source]
})

/** A machine in WPLM's shape: integer `status` with `status_label`. */
export const machineToWplm = (machine: Model.Machine) => {
  const wire: MachineWire = machineToWire(machine)
  return { ...wire, status: Wplm.machineStatusCodes[wire.status], status_label: wire.status }
}

/** Refuses a key those libraries would hash differently from the CRL (not trimmed and upper-case). */
const sentNormalised = (licenseKey: string) =>
  Wplm.isSentNormalised(licenseKey)
    ? Effect.void
    : Effect.fail(new Errors.InvalidParam({
      message: "Invalid parameter(s): license_key.",
      params: { license_key: "must be sent trimmed and in upper case on wplm/v1" }
    }))

/** The compatibility namespace's answers, by the `client` group's endpoint names (as `makeClientAnswers`). */
export const makeWplmAnswers = Effect.gen(function*() {
  const licensing = yield* Licensing
  const revocations = yield* RevocationList
  const lm = yield* makeClientAnswers
  type Answers = typeof lm

  const validate: Answers["validate"] = (payload, ipAddress) =>
    Effect.andThen(sentNormalised(payload.license_key), licensing.validate({ ...validateInput(payload, ipAddress), dialect: "wplm" })).pipe(
      Effect.map((result) => respond(validateAnswer(result, payload.nonce ?? null, licenseToWplm, machineToWplm)))
    )

  const activate: Answers["activate"] = (payload, ipAddress) =>
    Effect.andThen(sentNormalised(payload.license_key), licensing.activate(activateInput(payload, ipAddress))).pipe(
      Effect.map(({ certificate, created, machine }) => respond({ ...machineToWplm(machine), certificate }, created ? 201 : 200))
    )

  // A missing target is lm/v1's 400 naming the field, before the key's form is looked at.
  const deactivate: Answers["deactivate"] = (payload, ipAddress) =>
    Effect.flatMap(deactivateInput(payload, ipAddress), (input) => Effect.andThen(sentNormalised(payload.license_key), licensing.deactivate(input))).pipe(
      Effect.map(({ machine }) => respond({ deactivated: true, machine: machineToWplm(machine) }))
    )

  const heartbeat: Answers["heartbeat"] = (payload, ipAddress) =>
    Effect.andThen(sentNormalised(payload.license_key), licensing.heartbeat(heartbeatInput(payload, ipAddress))).pipe(
      Effect.map((beat) =>
        respond({
          ...machineToWplm(beat.machine),
          certificate: beat.certificate,
          next_heartbeat_before: iso(beat.nextHeartbeatBefore),
          lease_expires_at: isoOrNull(beat.leaseExpiresAt)
        })
      )
    )

  const crl: Answers["crl"] = (headers: CrlHeaders, _ipAddress) =>
    revocations.current.pipe(
      Effect.map((list) => {
        const etag = `"wplm-${list.etag.slice(1)}`
        const cacheHeaders = { etag, "cache-control": crlCacheControl }
        if (ifNoneMatchMatches(headers["if-none-match"], etag)) {
          return HttpServerResponse.empty({ status: 304, headers: cacheHeaders })
        }
        return respond({ crl: list.wplmToken, generated_at: iso(list.generatedAt), next_update: iso(list.nextUpdate), kid: list.kid }, 200, cacheHeaders)
      })
    )

  return { ...lm, validate, activate, deactivate, heartbeat, crl } satisfies Answers
})
