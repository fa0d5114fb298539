/** The signing feature's records: signing keys as the store keeps them. */
import { Schema } from "effect"
import { Millis } from "../shared/model.js"

/** The shape of a key id (`kid`): the first 16 lower-case hex characters of the SHA-256 of the public key. */
export const KID_LENGTH = 16
export const isKidFormat = (text: string): boolean => /^[0-9a-f]+$/.test(text) && text.length === KID_LENGTH

/** An Ed25519 signing key as the store keeps it: the 32-byte seed (sealed) and the raw public key, base64. */
export const StoredSigningKey = Schema.Struct({
  kid: Schema.String,
  seed: Schema.String,
  publicKey: Schema.String,
  current: Schema.Boolean,
  createdAt: Millis
})
export type StoredSigningKey = typeof StoredSigningKey.Type
