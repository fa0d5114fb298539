/**
 * The server's signing keys (CONTRACT §5): `LM_SIGNING_KEY`, or a key generated on first start and kept in the
 * store, its seed sealed with the master key (never in clear); rotation adds a new current key and keeps the old
 * ones published so tokens already issued still verify; retiring unlists a compromised old key. The `Signer`
 * built here follows the stored keys, also when another process rotates them.
 */
import { Clock, Context, Effect, Layer, Redacted, Schedule } from "effect"
import { logRoundFailure } from "../shared/background.js"
import type { StorageUnavailable } from "../shared/errors.js"
import { makeNodeCryptoSigner, Signer } from "./Signer.js"
import {
  generateSigningKey,
  InvalidSigningKey,
  keyRingFromStored,
  parseSigningKey,
  publicKeyBase64,
  seedBase64,
  type SigningKey
} from "./SigningKey.js"
import type { StoredSigningKey } from "./model.js"
import { SigningKeyRepository } from "./ports.js"
import { isSealed, MasterKey, type MasterKeyService, type SealedSecretUnreadable } from "./secrets.js"

export interface SigningKeysOptions {
  /** `LM_SIGNING_KEY`: base64 of a 32-byte Ed25519 seed, made the current key. */
  readonly signingKey?: Redacted.Redacted<string> | undefined
  /** How often the key ring is re-read from the store, to follow a rotation made elsewhere (default 10 s). */
  readonly refreshEvery?: number | undefined
}

/** What a seed is sealed for: its own key id, so a sealed seed copied onto another key's row does not open. */
const seedPurpose = (kid: string) => `signing seed ${kid}`

const stored = (master: MasterKeyService, key: SigningKey, current: boolean, createdAt: number): StoredSigningKey => ({
  kid: key.kid,
  seed: master.seal(Redacted.value(seedBase64(key)), seedPurpose(key.kid)),
  publicKey: publicKeyBase64(key.publicKey),
  current,
  createdAt
})

/** The stored keys with the current key's seed opened (the others only verify: their seeds are not needed). */
const openCurrent = (master: MasterKeyService, rows: ReadonlyArray<StoredSigningKey>) =>
  Effect.forEach(rows, (row) =>
    row.current && isSealed(row.seed)
      ? Effect.map(Effect.fromResult(master.open(row.seed, seedPurpose(row.kid))), (seed) => ({ ...row, seed }))
      : Effect.succeed(row))

export class SigningKeys extends Context.Service<SigningKeys, {
  /** Makes a new current key; the previous ones stay accepted. Returns the new `kid`. */
  readonly rotate: Effect.Effect<string, StorageUnavailable | InvalidSigningKey | SealedSecretUnreadable>
  /** Re-reads the stored keys into the signer. */
  readonly refresh: Effect.Effect<void, StorageUnavailable | InvalidSigningKey | SealedSecretUnreadable>
  /**
   * Unlists a key that is not current (a compromised one): it is no longer published, and tokens it signed no
   * longer verify, here at once and in other processes at their next refresh.
   */
  readonly retire: (kid: string) => Effect.Effect<void, StorageUnavailable | InvalidSigningKey | SealedSecretUnreadable>
}>()("@lm/domain/SigningKeys") {
  /**
   * `SigningKeys` and a node:crypto `Signer` on the stored keys. At start: `LM_SIGNING_KEY` becomes the current
   * key when it is not already; with no key at all, one is generated and stored; seeds an older version stored
   * in clear are sealed with the master key. A seed sealed with another master key fails the layer with a
   * message naming the setting.
   */
  static readonly layer = (options: SigningKeysOptions = {}) =>
    Layer.effectContext(
      Effect.gen(function*() {
        const repo = yield* SigningKeyRepository
        const master = yield* MasterKey
        const now = yield* Clock.currentTimeMillis
        const existing = yield* repo.list
        for (const row of existing) {
          if (!isSealed(row.seed)) yield* repo.replaceSeed(row.kid, master.seal(row.seed, seedPurpose(row.kid)))
        }
        if (options.signingKey !== undefined) {
          const key = yield* parseSigningKey(options.signingKey)
          if (!existing.some((row) => row.kid === key.kid && row.current)) yield* repo.insert(stored(master, key, true, now))
        } else if (existing.length === 0) {
          yield* repo.insert(stored(master, generateSigningKey(), true, now))
        }
        const load = repo.list.pipe(Effect.flatMap((rows) => openCurrent(master, rows)), Effect.flatMap(keyRingFromStored))
        const signer = yield* makeNodeCryptoSigner(yield* load)
        const refresh = Effect.flatMap(load, signer.setKeyRing)
        const rotate = Effect.gen(function*() {
          const key = generateSigningKey()
          yield* repo.insert(stored(master, key, true, yield* Clock.currentTimeMillis))
          yield* refresh
          return key.kid
        })
        const retire = Effect.fn("SigningKeys.retire")(function*(kid: string) {
          if (!(yield* repo.retire(kid))) {
            const known = (yield* repo.list).find((row) => row.kid === kid)
            return yield* new InvalidSigningKey({
              message: known === undefined
                ? `No signing key has the id ${kid}.`
                : `${kid} is the current signing key: rotate first, then retire it.`
            })
          }
          yield* refresh
        })
        yield* refresh.pipe(
          Effect.catchCause(logRoundFailure("signing key refresh failed")),
          Effect.repeat(Schedule.spaced(`${options.refreshEvery ?? 10_000} millis`)),
          Effect.delay(`${options.refreshEvery ?? 10_000} millis`),
          Effect.forkScoped
        )
        return Context.make(Signer, signer).pipe(Context.add(SigningKeys, SigningKeys.of({ rotate, refresh, retire })))
      })
    )
}
