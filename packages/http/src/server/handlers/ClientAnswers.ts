/**
 * The answers of the public client writes (`validate`, `activate`, `deactivate`, `heartbeat`; CONTRACT §4, §5),
 * from a decoded payload and the client's address to the HTTP response, refusals included. They are built once
 * from the domain's services and shared by the two ways a request reaches them: the `client` group's HttpApi
 * handlers (`Client.ts`) and the fast path in front of the Effect stack (`FastPath.ts`). Nothing here reads the
 * request: the caller decodes the payload with the endpoint's schema and works out the client IP.
 *
 * Answers are written with {@link respond}, straight to JSON: every body is typed against its endpoint's
 * schema (`ValidateResponse`, ...), whose wire values are plain JSON (strings, numbers, null), so the schema's
 * encoding pass would only copy them; skipping it saves about 15–25 µs per validate answer (measured on this
 * machine). A schema given a non-identity encoding (e.g. a `DateTime`) must go back to returning `ok(...)`.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { Licensing, Tokens } from "@lm/domain"
import type {
  ActivatedMachine,
  ActivatePayload,
  DeactivatePayload,
  DeactivateResponse,
  HeartbeatPayload,
  HeartbeatResponse,
  ValidatePayload,
  ValidateResponse
} from "../../api/Client.js"
import * as ApiErrors from "../../domain/ApiErrors.js"
import { ok } from "../../domain/Envelope.js"
import { iso, isoNow, isoOrNull, licenseToWire, machineToWire } from "../../domain/Wire.js"

/** A success envelope around `data`, written as JSON with `status` (see the module comment). */
export const respond = <A>(data: A, status = 200, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.jsonUnsafe(ok(data), headers === undefined ? { status } : { status, headers })

/**
 * The client writes' answers on the engine's `Licensing` and `Tokens`, by endpoint name: each takes the decoded
 * payload and the client's address and gives the response, or the refusal as an envelope error.
 */
export const makeClientAnswers = Effect.gen(function*() {
  const licensing = yield* Licensing
  const tokens = yield* Tokens

  const validate = (payload: typeof ValidatePayload.Type, ipAddress: string | null) => {
    const fingerprint = payload.fingerprint ?? null
    const nonce = payload.nonce ?? null
    return licensing.validate({ licenseKey: payload.license_key, fingerprint, ipAddress }).pipe(
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
            server_time: isoNow(now),
            ...(nonce === null ? {} : { nonce })
          }
          return respond(body)
        })
      ),
      Effect.mapError(ApiErrors.fromDomain)
    )
  }

  const activate = (payload: typeof ActivatePayload.Type, ipAddress: string | null) =>
    licensing.activate({
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
    }).pipe(
      Effect.flatMap(({ created, license, machine, now }) =>
        Effect.map(tokens.machineCertificate(license, machine, now), (certificate) => {
          const body: ActivatedMachine = { ...machineToWire(machine), certificate }
          return respond(body, created ? 201 : 200)
        })
      ),
      Effect.mapError(ApiErrors.fromDomain)
    )

  const deactivate = (payload: typeof DeactivatePayload.Type, ipAddress: string | null) => {
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
  }

  const heartbeat = (payload: typeof HeartbeatPayload.Type, ipAddress: string | null) =>
    licensing.heartbeat({
      licenseKey: payload.license_key,
      fingerprint: payload.fingerprint,
      ipAddress,
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
    )

  return { validate, activate, deactivate, heartbeat }
})

/** The answers of the client writes. */
export type ClientAnswers = Effect.Success<typeof makeClientAnswers>
