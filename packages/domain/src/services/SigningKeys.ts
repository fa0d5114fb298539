/**
 * The server's signing keys (CONTRACT §5): `LM_SIGNING_KEY`, or a key generated on first start and kept in the
 * store; rotation adds a new current key and keeps the old ones published so tokens already issued still
 * verify. The `Signer` built here follows the stored keys, also when another process rotates them.
 */
import { Clock, Context, Effect, Layer, Redacted, Schedule } from "effect"
import type { StorageUnavailable } from "../errors.js"
import { SigningKeyRepository } from "../ports.js"
import { makeNodeCryptoSigner, Signer } from "../signing/Signer.js"
import {
  generateSigningKey,
  type InvalidSigningKey,
  keyRingFromStored,
  parseSigningKey,
  publicKeyBase64,
  seedBase64,
  type SigningKey
} from "../signing/SigningKey.js"

export interface SigningKeysOptions {
  /** `LM_SIGNING_KEY`: base64 of a 32-byte Ed25519 seed, made the current key. */
  readonly signingKey?: Redacted.Redacted<string> | undefined
  /** How often the key ring is re-read from the store, to follow a rotation made elsewhere (default 10 s). */
  readonly refreshEvery?: number | undefined
}

const stored = (key: SigningKey, current: boolean, createdAt: number) => ({
  kid: key.kid,
  seed: Redacted.value(seedBase64(key)),
  publicKey: publicKeyBase64(key.publicKey),
  current,
  createdAt
})

export class SigningKeys extends Context.Service<SigningKeys, {
  /** Makes a new current key; the previous ones stay accepted. Returns the new `kid`. */
  readonly rotate: Effect.Effect<string, StorageUnavailable | InvalidSigningKey>
  /** Re-reads the stored keys into the signer. */
  readonly refresh: Effect.Effect<void, StorageUnavailable | InvalidSigningKey>
}>()("@lm/domain/SigningKeys") {
  /**
   * `SigningKeys` and a node:crypto `Signer` on the stored keys. At start: `LM_SIGNING_KEY` becomes the current
   * key when it is not already; with no key at all, one is generated and stored.
   */
  static readonly layer = (options: SigningKeysOptions = {}) =>
    Layer.effectContext(
      Effect.gen(function*() {
        const repo = yield* SigningKeyRepository
        const now = yield* Clock.currentTimeMillis
        const existing = yield* repo.list
        if (options.signingKey !== undefined) {
          const key = yield* parseSigningKey(options.signingKey)
          if (!existing.some((row) => row.kid === key.kid && row.current)) yield* repo.insert(stored(key, true, now))
        } else if (existing.length === 0) {
          yield* repo.insert(stored(generateSigningKey(), true, now))
        }
        const load = Effect.flatMap(repo.list, keyRingFromStored)
        const signer = yield* makeNodeCryptoSigner(yield* load)
        const refresh = Effect.flatMap(load, signer.setKeyRing)
        const rotate = Effect.gen(function*() {
          const key = generateSigningKey()
          yield* repo.insert(stored(key, true, yield* Clock.currentTimeMillis))
          yield* refresh
          return key.kid
        })
        yield* refresh.pipe(
          Effect.catchCause((cause) => Effect.logWarning("signing key refresh failed", cause)),
          Effect.repeat(Schedule.spaced(`${options.refreshEvery ?? 10_000} millis`)),
          Effect.delay(`${options.refreshEvery ?? 10_000} millis`),
          Effect.forkScoped
        )
        return Context.make(Signer, signer).pipe(Context.add(SigningKeys, SigningKeys.of({ rotate, refresh })))
      })
    )
}
