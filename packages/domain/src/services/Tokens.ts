/**
 * The signed things a client takes offline (CONTRACT §5): validate's `signed_payload` and the machine
 * `certificate` of activate and heartbeat, each signed fresh with the current key.
 */
import { Context, Effect, Layer } from "effect"
import type { License, Machine } from "../model.js"
import { Signer } from "../signing/Signer.js"
import * as Token from "../signing/Token.js"
import type { ValidateResult } from "./Licensing.js"

export interface TokensOptions {
  /** Offline TTL of validate's payload in seconds (default 7 days). */
  readonly offlineTtlSeconds?: number | undefined
}

export class Tokens extends Context.Service<Tokens, {
  /** Validate's `signed_payload`: what validation found, the fingerprint and nonce sent, `exp`. */
  readonly licensePayload: (
    result: ValidateResult,
    sent: { readonly fingerprint: string | null; readonly nonce: string | number | null }
  ) => Effect.Effect<string>
  /** A machine's `certificate`: valid until its lease ends (floating) or 30 days, never past expiry + grace. */
  readonly machineCertificate: (license: License, machine: Machine, now: number) => Effect.Effect<string>
}>()("@lm/domain/Tokens") {
  static readonly layer = (options: TokensOptions = {}) =>
    Layer.effect(
      Tokens,
      Effect.gen(function*() {
        const signer = yield* Signer
        return Tokens.of({
          licensePayload: (result, sent) =>
            signer.signToken(
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
                ...(options.offlineTtlSeconds === undefined ? {} : { ttlSeconds: options.offlineTtlSeconds })
              })
            ),
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
