/** The signing feature's records: signing keys as the store keeps them. */

/** An Ed25519 signing key as the store keeps it: the 32-byte seed and the raw public key, base64. */
export interface StoredSigningKey {
  readonly kid: string
  readonly seed: string
  readonly publicKey: string
  readonly current: boolean
  readonly createdAt: number
}
