/**
 * The signed things a client takes offline (CONTRACT §5): validate's `signed_payload` (a license token, only for a
 * valid answer) or `signed_refusal` (for a refusal, which never entitles), and the machine `certificate` of
 * activate and heartbeat, each signed fresh with the current key.
 */
import { Context, Effect, Layer } from "effect"
import { Signer } from "../signing/Signer.js"
import * as Token from "../signing/Token.js"
import type { License, Machine } from "./model.js"
import type { Validation } from "./validation.js"
import * as Wplm from "./wplm.js"

/** What validation found, which its signed answer states. */
export interface Validated {
  readonly license: License
  readonly validation: Validation
  readonly now: number
}

/** What the client sent to validate that its signed answer repeats. */
export interface SentToValidate {
  readonly fingerprint: string | null
  readonly nonce: string | number | null
}

/**
 * Whose client reads the answer: lm/v1's (default), or the WPLM client libraries' (CONTRACT §17: a license token
 * in every answer, its `expires` bounded as `wplm.ts` says).
 */
export type TokenDialect = "lm" | "wplm"

/** Validate's signed answer (see `Tokens.validationTokens`). */
export interface ValidationTokens {
  readonly signedPayload: string | null
  readonly signedRefusal: string | null
}

export interface TokensOptions {
  /** Offline TTL of validate's payload in seconds (default 7 days). */
  readonly offlineTtlSeconds?: number | undefined
}

export class Tokens extends Context.Service<Tokens, {
  /**
   * Validate's signed answer: a license token (`signedPayload`) when validation says valid, else a refusal token
   * (`signedRefusal`) and no license token, so that a client caching any signed payload cannot cache a refusal
   * as an entitlement. In the `wplm` dialect `signedPayload` is always a license token (`wplm.ts`), a refusal's
   * saying `valid: false` with an `expires` in the past, and `signedRefusal` is as in lm/v1.
   */
  readonly validationTokens: (
    result: Validated,
    sent: SentToValidate,
    dialect?: TokenDialect
  ) => Effect.Effect<ValidationTokens>
  /**
   * {@link validationTokens} at once, on the caller's stack, when the signer signs synchronously (node:crypto);
   * undefined when it cannot.
   */
  readonly validationTokensNow: (result: Validated, sent: SentToValidate, dialect?: TokenDialect) => ValidationTokens | undefined
  /** A license token: what validation found, the fingerprint and nonce sent, `exp`. */
  readonly licensePayload: (
    result: Validated,
    sent: SentToValidate
  ) => Effect.Effect<string>
  /** A machine's `certificate`: valid until its lease ends (floating) or 30 days, never past expiry + grace. */
  readonly machineCertificate: (license: License, machine: Machine, now: number) => Effect.Effect<string>
}>()("@lm/domain/Tokens") {
  static readonly layer = (options: TokensOptions = {}) =>
    Layer.effect(
      Tokens,
      Effect.gen(function*() {
        const signer = yield* Signer
        const licenseClaims = (result: Validated, sent: SentToValidate) =>
          Token.license({
              licenseKey: result.license.key,
              licenseId: result.license.id,
              productId: result.license.productId,
              status: result.validation.status,
              valid: result.validation.valid,
              code: result.validation.code,
              expiresAt: result.license.expiresAt,
              graceDays: result.license.graceDays,
              maxActivations: result.license.maxActivations,
              fingerprint: sent.fingerprint,
              nonce: sent.nonce,
              issuedAt: result.now,
              entitlements: result.validation.entitlements,
              ...(options.offlineTtlSeconds === undefined ? {} : { ttlSeconds: options.offlineTtlSeconds })
            })
        const refusalClaims = (result: Validated, sent: SentToValidate) =>
          Token.refusal({
            licenseKey: result.license.key,
            licenseId: result.license.id,
            status: result.validation.status,
            code: result.validation.code,
            fingerprint: sent.fingerprint,
            nonce: sent.nonce,
            issuedAt: result.now
          })
        /**
         * What validate's answer signs, as the dialect says: the license token's claims (or null) and the refusal
         * token's (or null).
         */
        const answerClaims = (result: Validated, sent: SentToValidate, dialect: TokenDialect) => ({
          payload: dialect === "wplm"
            ? Wplm.licenseClaims(licenseClaims(result, sent))
            : result.validation.valid
            ? licenseClaims(result, sent)
            : null,
          refusal: result.validation.valid ? null : refusalClaims(result, sent)
        })
        const licensePayload = (result: Validated, sent: SentToValidate) => signer.signToken(licenseClaims(result, sent))
        const signOrNull = (claims: Token.Claims | null) => claims === null ? Effect.succeed(null) : signer.signToken(claims)
        return Tokens.of({
          validationTokens: (result, sent, dialect = "lm") => {
            const { payload, refusal } = answerClaims(result, sent, dialect)
            return Effect.zipWith(signOrNull(payload), signOrNull(refusal), (signedPayload, signedRefusal) => ({ signedPayload, signedRefusal }))
          },
          validationTokensNow: (result, sent, dialect = "lm") => {
            const { payload, refusal } = answerClaims(result, sent, dialect)
            const signedPayload = payload === null ? null : signer.signTokenNow(payload)
            const signedRefusal = refusal === null ? null : signer.signTokenNow(refusal)
            return signedPayload === undefined || signedRefusal === undefined ? undefined : { signedPayload, signedRefusal }
          },
          licensePayload,
          machineCertificate: (license, machine, now) =>
            signer.signToken(
              Token.machine({
                licenseKey: license.key,
                licenseId: license.id,
                productId: license.productId,
                machineId: machine.id,
                fingerprint: machine.fingerprint,
                expiresAt: license.expiresAt,
                maxActivations: license.maxActivations,
                graceDays: license.graceDays,
                issuedAt: now,
                leaseExpiresAt: license.isFloating ? machine.leaseExpiresAt : null
              })
            )
        })
      })
    )
}
