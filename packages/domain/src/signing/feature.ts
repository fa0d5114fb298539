/** The signing feature in the engine: the stored signing keys and their signer, and the master key sealing them. */
import { Effect, Layer, type Redacted } from "effect"
import { servicesOnly } from "../shared/feature.js"
import { MasterKey } from "./secrets.js"
import { makeNodeCryptoSigner, Signer } from "./Signer.js"
import { generateSeed } from "./SigningKey.js"
import { SigningKeys } from "./SigningKeys.js"

/** Settings of the signing feature. */
export interface SigningOptions {
  /**
   * The key that seals secrets at rest (the signing seed). Without it a random one serves for the life of the
   * process: fine for a store that keeps nothing, while a durable store sealed with it refuses to open later.
   */
  readonly masterKey?: Redacted.Redacted<Uint8Array> | undefined
  /** Base64 of a 32-byte Ed25519 seed; without it one is generated on first start and kept in the store. */
  readonly signingKey?: Redacted.Redacted<string> | undefined
}

/** `SigningKeys` and the node:crypto `Signer` on the stored keys, sealed with the `MasterKey`. */
export const feature = (options: SigningOptions) =>
  servicesOnly(
    SigningKeys.layer({ signingKey: options.signingKey }).pipe(
      Layer.provideMerge(options.masterKey === undefined ? MasterKey.layerEphemeral : MasterKey.layer(options.masterKey))
    )
  )

/**
 * A `Signer` with a fresh key of its own, kept nowhere, and a random `MasterKey`: signing for services on a
 * throw-away store (`Engine.services`), without stored keys and their refresh.
 */
export const ephemeral = servicesOnly(
  Layer.merge(Layer.effect(Signer, Effect.suspend(() => makeNodeCryptoSigner(generateSeed()))), MasterKey.layerEphemeral)
)
