/**
 * The certificate revocation list (CONTRACT §4 `/crl`, §5): revoked and terminated keys, suspended keys and
 * revoked machines with their fingerprints (SHA-256 hex), signed, with a `seq` that grows on every change.
 * The store's revocation sequence is read on every request, so a change shows in the very next one, also one
 * made by another process; the list is rebuilt and re-signed only when the sequence or the signing key moved.
 */
import { Clock, Context, Effect, Layer, Semaphore } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import { EventOutbox } from "../shared/ports.js"
import { Signer } from "../signing/Signer.js"
import * as Token from "../signing/Token.js"
import { LicenseRepository, MachineRepository } from "./ports.js"
import * as Wplm from "./wplm.js"

/** The CRL as served. */
export interface SignedRevocationList {
  readonly token: string
  /** The same list for the WPLM client libraries (CONTRACT §17, `wplm.ts`): suspended keys in `revoked_keys` too. */
  readonly wplmToken: string
  readonly seq: number
  readonly kid: string
  /** When the list's content last changed (first built in this process for that seq). */
  readonly generatedAt: number
  /** When clients should fetch again at the latest. */
  readonly nextUpdate: number
  /** A strong validator for HTTP caching: changes whenever the token does. */
  readonly etag: string
}

export interface RevocationListOptions {
  /** How long clients may rely on a list before fetching again, in seconds (default 1 hour). */
  readonly nextUpdateSeconds?: number | undefined
}

export class RevocationList extends Context.Service<RevocationList, {
  readonly current: Effect.Effect<SignedRevocationList, StorageUnavailable>
}>()("@lm/domain/RevocationList") {
  static readonly layer = (options: RevocationListOptions = {}) =>
    Layer.effect(
      RevocationList,
      Effect.gen(function*() {
        const outbox = yield* EventOutbox
        const licenses = yield* LicenseRepository
        const machines = yield* MachineRepository
        const signer = yield* Signer
        const nextUpdateMs = (options.nextUpdateSeconds ?? 3600) * 1000
        const building = yield* Semaphore.make(1)
        let cached: SignedRevocationList | undefined

        const build = Effect.fnUntraced(function*(seq: number, kid: string) {
          const [revoked, suspended, revokedMachines] = yield* Effect.all([
            licenses.keysInStates(["revoked", "terminated"]),
            licenses.keysInStates(["suspended"]),
            machines.listRevoked
          ])
          const now = yield* Clock.currentTimeMillis
          const generatedAt = cached?.seq === seq ? cached.generatedAt : now
          const claims = Token.crl({
              seq,
              revokedKeys: revoked.map(Token.licenseKeyHash),
              suspendedKeys: suspended.map(Token.licenseKeyHash),
              revokedFingerprints: [...new Set(revokedMachines.map((m) => Token.fingerprintHash(m.fingerprint)))],
              revokedMachines: revokedMachines.map((m) => m.id),
              generatedAt,
              issuedAt: now
            })
          const token = yield* signer.signToken(claims)
          const wplmToken = yield* signer.signToken(Wplm.crlClaims(claims))
          return { token, wplmToken, seq, kid, generatedAt, nextUpdate: now + nextUpdateMs, etag: `"crl-${seq}-${kid}"` }
        })

        const current = Effect.gen(function*() {
          const seq = yield* outbox.revocationSeq
          const { kid } = yield* signer.current
          if (cached !== undefined && cached.seq === seq && cached.kid === kid) return cached
          return yield* Semaphore.withPermit(building)(
            Effect.suspend(() =>
              cached !== undefined && cached.seq === seq && cached.kid === kid
                ? Effect.succeed(cached)
                : Effect.tap(build(seq, kid), (list) =>
                  Effect.sync(() => {
                    cached = list
                  }))
            )
          )
        })

        return RevocationList.of({ current })
      })
    )
}
