/**
 * The client calls (CONTRACT §4): validate, activate, deactivate, heartbeat. Activation, deactivation and
 * heartbeats become seat changes (`seatChanges.ts`) that `SeatBatches` runs in a transaction holding the
 * license's lock, so seat checks and writes are atomic on every store and across processes; concurrent ones
 * share transactions (group commit). Every call and every refusal goes to the event log. The answers are signed
 * here (`Tokens`): validate's license token or refusal token, the machine certificate of activate and heartbeat,
 * so an embedder gets the same signed answer as the server sends.
 */
import { Clock, Context, Effect, Layer, Result, Tracer } from "effect"
import { Blacklist, type BlacklistSubject } from "../access/Blacklist.js"
import { ActivityRecorder } from "../activity/ActivityRecorder.js"
import type { ActivityKind } from "../activity/model.js"
import type { InvalidParam, StorageUnavailable } from "../shared/errors.js"
import * as Metrics from "../shared/metrics.js"
import { makeSeatBatches } from "./SeatBatches.js"
import {
  type LicenseNotFound,
  licenseNotFound,
  type MachineInactive,
  type MachineLimitExceeded,
  type MachineNotFound,
  type Refused
} from "./errors.js"
import { effectiveEntitlements } from "./entitlements.js"
import { normalizeKey, parseKey } from "./keys.js"
import type { License, Machine, MachineFacts } from "./model.js"
import { LicenseRepository, MachineRepository, PolicyRepository } from "./ports.js"
import type { ActivateResult as SeatTaken, DeactivateResult, HeartbeatResult as Beaten } from "./seatChanges.js"
import { type TokenDialect, Tokens, type Validated } from "./Tokens.js"
import { CachedValidationReads } from "./ValidationCache.js"
import { validateLicense } from "./validation.js"

export type { DeactivateResult } from "./seatChanges.js"

/** Who is calling: the client's address as the HTTP layer saw it. */
export interface ClientContext {
  readonly ipAddress: string | null
}

export interface ValidateInput extends ClientContext {
  readonly licenseKey: string
  readonly fingerprint?: string | null | undefined
  readonly appVersion?: string | null | undefined
  /** The client's nonce, repeated in the signed answer. */
  readonly nonce?: string | number | null | undefined
  /** Entitlement codes the client needs: one the license does not hold answers `entitlements_missing`. */
  readonly entitlements?: ReadonlyArray<string> | undefined
  /** Whose client reads the signed answer (`Tokens`): lm/v1's (default) or the WPLM libraries' (CONTRACT §17). */
  readonly dialect?: TokenDialect | undefined
}

/**
 * What validation found, signed: a license token (`signedPayload`) when the license is valid, else a refusal
 * token (`signedRefusal`), never both (CONTRACT §5).
 */
export interface ValidateResult extends Validated {
  readonly signedPayload: string | null
  readonly signedRefusal: string | null
}

/** The seat taken (or held already), and the machine's signed `certificate`. */
export interface ActivateResult extends SeatTaken {
  readonly certificate: string
}

/** The beat recorded, and the machine's fresh signed `certificate`. */
export interface HeartbeatResult extends Beaten {
  readonly certificate: string
}

export interface ActivateInput extends ClientContext {
  readonly licenseKey: string
  readonly facts: MachineFacts
}

export type DeactivateInput = ClientContext & { readonly licenseKey: string } & (
  | { readonly fingerprint: string; readonly machineId?: undefined }
  | { readonly machineId: number; readonly fingerprint?: undefined }
)

export interface HeartbeatInput extends ClientContext {
  readonly licenseKey: string
  readonly fingerprint: string
  readonly appVersion?: string | undefined
}

/** What the event log notes of a client call's input. */
type LoggedInput = ClientContext & {
  readonly licenseKey: string
  readonly fingerprint?: string | null | undefined
  readonly appVersion?: string | null | undefined
}

/** The license a client call found, noted as soon as it is found (for the event log). */
interface Seen {
  licenseId: number | null
  productId: number | null
}

export class Licensing extends Context.Service<Licensing, {
  readonly validate: (input: ValidateInput) => Effect.Effect<ValidateResult, InvalidParam | LicenseNotFound | StorageUnavailable>
  /**
   * `validate` at once, on the caller's stack, with the services of `context` (its `Clock`, `Blacklist`,
   * metrics): the same answer, event and count, when everything it reads is in the validation cache, the key
   * is well-formed, the signer signs synchronously and no tracer is installed; undefined otherwise, having
   * done nothing (the caller then runs `validate`). For a synchronous transport (the HTTP fast path).
   */
  readonly validateNow: (input: ValidateInput, context: Context.Context<never>) => ValidateResult | undefined
  readonly activate: (
    input: ActivateInput
  ) => Effect.Effect<ActivateResult, InvalidParam | LicenseNotFound | Refused | MachineLimitExceeded | StorageUnavailable>
  readonly deactivate: (
    input: DeactivateInput
  ) => Effect.Effect<DeactivateResult, InvalidParam | LicenseNotFound | MachineNotFound | StorageUnavailable>
  readonly heartbeat: (
    input: HeartbeatInput
  ) => Effect.Effect<HeartbeatResult, InvalidParam | LicenseNotFound | MachineNotFound | Refused | MachineInactive | StorageUnavailable>
}>()("@lm/domain/Licensing") {
  static readonly layer = Layer.effect(
    Licensing,
    Effect.gen(function*() {
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const policies = yield* PolicyRepository
      const recorder = yield* ActivityRecorder
      const tokens = yield* Tokens
      const batches = yield* makeSeatBatches

      /** A client call's counter and event-log entry. */
      const outcome = (
        kind: ActivityKind,
        input: LoggedInput,
        found: {
          readonly licenseId: number | null
          readonly productId: number | null
          readonly machineId: number | null
          readonly result: string
          readonly at: number
        }
      ) => ({
        counted: kind === "validate" ? Metrics.validations({ code: found.result }) : Metrics.seatChanges({ kind, result: found.result }),
        entry: {
          kind,
          licenseId: found.licenseId,
          licenseKey: normalizeKey(input.licenseKey),
          machineId: found.machineId,
          fingerprint: input.fingerprint ?? null,
          ipAddress: input.ipAddress,
          appVersion: input.appVersion ?? null,
          result: found.result,
          at: found.at,
          productId: found.productId
        }
      })

      /**
       * Records the outcome of a client call in the event log, success or refusal. `run` notes the license it
       * found in `seen`, so that a refusal is recorded against its license too (null when there is none).
       */
      const logged = <A, E extends { readonly code?: string }, R>(
        kind: ActivityKind,
        input: LoggedInput,
        run: (seen: Seen) => Effect.Effect<A, E, R>,
        describe: (a: A) => { readonly license: License; readonly machineId: number | null; readonly result: string }
      ) => {
        const seen: Seen = { licenseId: null, productId: null }
        return Effect.onExit(run(seen), (exit) =>
          Effect.flatMap(Clock.currentTimeMillis, (at) => {
            let licenseId: number | null = seen.licenseId
            let productId: number | null = seen.productId
            let machineId: number | null = null
            let result = "error"
            if (exit._tag === "Success") {
              const d = describe(exit.value)
              licenseId = d.license.id
              productId = d.license.productId
              machineId = d.machineId
              result = d.result
            } else {
              const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
              const code = failure?._tag === "Fail" ? (failure.error as { readonly code?: string }).code : undefined
              result = code ?? "internal_error"
            }
            const { counted, entry } = outcome(kind, input, { licenseId, productId, machineId, result, at })
            return Effect.andThen(Metrics.increment(counted), recorder.record(entry))
          })
        )
      }

      /** Whether the blacklist refuses the call's key, fingerprint or client address. */
      const blacklisted = Effect.fnUntraced(function*(subject: BlacklistSubject) {
        return (yield* Blacklist).isBlacklisted(subject)
      })

      const validate = Effect.fnUntraced(function*(input: ValidateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const license = yield* licenses.findByKey(key)
        if (license === undefined) return yield* licenseNotFound()
        seen.licenseId = license.id
        seen.productId = license.productId
        const fingerprint = input.fingerprint ?? null
        const list = yield* machines.listForValidation(license.id, fingerprint)
        // The policy's codes are live: read through the validation cache like the license, no extra round trip.
        const policy = license.policyId === null ? undefined : yield* policies.findById(license.policyId)
        const now = yield* Clock.currentTimeMillis
        const validation = validateLicense({
          license,
          machines: list,
          fingerprint,
          now,
          blacklisted: yield* blacklisted({ licenseKey: key, fingerprint, ipAddress: input.ipAddress }),
          entitlements: effectiveEntitlements(license.entitlements, policy?.entitlements),
          required: input.entitlements
        })
        return { license, validation, now }
      })

      const cachedReads = yield* CachedValidationReads
      // Each call is a span when a tracer is installed (OTLP, `apps/server`), as an `Effect.fn` would be; without one
      // the hot path makes none.
      const tracing = (yield* Tracer.Tracer) !== Tracer.nativeTracer

      /** The clock and blacklist of the last context `validateNow` was given (the fast path gives the same one). */
      let servicesOf: { readonly context: Context.Context<never>; readonly clock: Clock.Clock; readonly blacklist: Context.Service.Shape<typeof Blacklist> } | undefined
      const servicesIn = (context: Context.Context<never>) =>
        servicesOf?.context === context
          ? servicesOf
          : servicesOf = { context, clock: Context.get(context, Clock.Clock), blacklist: Context.get(context, Blacklist) }

      /** `validate` from the cache, on the caller's stack (see the service's `validateNow`). */
      const validateNow = (input: ValidateInput, context: Context.Context<never>): ValidateResult | undefined => {
        if (tracing) return undefined
        const parsed = parseKey(input.licenseKey)
        if (Result.isFailure(parsed)) return undefined
        const key = parsed.success
        const fingerprint = input.fingerprint ?? null
        const { blacklist, clock } = servicesIn(context)
        const reads = cachedReads.peek(key, fingerprint, clock)
        if (reads === undefined) return undefined
        const { license } = reads
        const now = clock.currentTimeMillisUnsafe()
        const validation = validateLicense({
          license,
          machines: reads.machines,
          fingerprint,
          now,
          blacklisted: blacklist.isBlacklisted({ licenseKey: key, fingerprint, ipAddress: input.ipAddress }),
          entitlements: effectiveEntitlements(license.entitlements, reads.policy?.entitlements),
          required: input.entitlements
        })
        const validated = { license, validation, now }
        // Signed before anything is recorded, so that an undefined answer has done nothing.
        const signed = tokens.validationTokensNow(validated, { fingerprint, nonce: input.nonce ?? null }, input.dialect)
        if (signed === undefined) return undefined
        const { counted, entry } = outcome("validate", input, {
          licenseId: license.id,
          productId: license.productId,
          machineId: validation.machine?.id ?? null,
          result: validation.code,
          at: clock.currentTimeMillisUnsafe()
        })
        counted.updateUnsafe(1, context)
        const rest = recorder.recordUnsafe(entry)
        if (rest !== Effect.void) Effect.runForkWith(context)(rest)
        return { ...validated, ...signed }
      }

      /** Notes the license a seat change found, for the event log. */
      const noteLicense = (seen: Seen) => (licenseId: number) => {
        seen.licenseId = licenseId
      }

      const activate = Effect.fnUntraced(function*(input: ActivateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const facts = { ...input.facts, ipAddress: input.ipAddress }
        return yield* batches.submit(
          { _tag: "Activate", key, facts, blacklisted: yield* blacklisted({ licenseKey: key, fingerprint: input.facts.fingerprint, ipAddress: input.ipAddress }) },
          noteLicense(seen)
        )
      })

      const deactivate = Effect.fnUntraced(function*(input: DeactivateInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        const machine = input.fingerprint !== undefined ? { fingerprint: input.fingerprint } : { machineId: input.machineId }
        return yield* batches.submit({ _tag: "Deactivate", key, ...machine }, noteLicense(seen))
      })

      const heartbeat = Effect.fnUntraced(function*(input: HeartbeatInput, seen: Seen) {
        const key = yield* Effect.fromResult(parseKey(input.licenseKey))
        return yield* batches.submit(
          {
            _tag: "Heartbeat",
            key,
            fingerprint: input.fingerprint,
            appVersion: input.appVersion,
            blacklisted: yield* blacklisted({ licenseKey: key, fingerprint: input.fingerprint, ipAddress: input.ipAddress })
          },
          noteLicense(seen)
        )
      })

      /** A result with the machine's signed certificate (signed after the event log noted the call). */
      const certified = <A extends { readonly license: License; readonly machine: Machine; readonly now: number }>(result: A) =>
        Effect.map(tokens.machineCertificate(result.license, result.machine, result.now), (certificate) => ({ ...result, certificate }))

      const spanned = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>) => (tracing ? Effect.withSpan(effect, name) : effect)

      return Licensing.of({
        validateNow,
        validate: (input) =>
          spanned("Licensing.validate", logged("validate", input, (seen) => validate(input, seen), (r) => ({
            license: r.license,
            machineId: r.validation.machine?.id ?? null,
            result: r.validation.code
          })).pipe(
            Effect.flatMap((result) =>
              Effect.map(
                tokens.validationTokens(result, { fingerprint: input.fingerprint ?? null, nonce: input.nonce ?? null }, input.dialect),
                (signed) => ({ ...result, ...signed })
              )
            )
          )),
        activate: (input) =>
          spanned("Licensing.activate", logged(
            "activate",
            { ...input, fingerprint: input.facts.fingerprint, appVersion: input.facts.appVersion },
            (seen) => activate(input, seen),
            (r) => ({ license: r.license, machineId: r.machine.id, result: r.created ? "activated" : "already_active" })
          ).pipe(Effect.flatMap(certified))),
        deactivate: (input) =>
          spanned(
            "Licensing.deactivate",
            logged("deactivate", input, (seen) => deactivate(input, seen), (r) => ({ license: r.license, machineId: r.machine.id, result: "deactivated" }))
          ),
        heartbeat: (input) =>
          spanned(
            "Licensing.heartbeat",
            logged("heartbeat", input, (seen) => heartbeat(input, seen), (r) => ({ license: r.license, machineId: r.machine.id, result: "ok" })).pipe(
              Effect.flatMap(certified)
            )
          )
      })
    })
  )
}
