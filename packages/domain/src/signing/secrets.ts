/**
 * The master key that seals secrets at rest (the signing seed; webhook secrets later): AES-256-GCM with a random
 * 96-bit nonce per seal, through node:crypto. A stored secret is never in clear, so a dump, a replica or the WAL
 * of the store does not hand out the power to sign.
 *
 * A sealed value is text: `lm-sealed:v1:<key id>:<base64url(nonce | ciphertext | tag)>`. The key id (8 hex of
 * the SHA-256 of the master key) tells "sealed with another master key" apart from "damaged". Each seal is bound
 * to what it is for (`purpose`, e.g. `signing-seed:<kid>`, as GCM's associated data), so a sealed value copied
 * onto another row does not open.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { Context, Effect, Layer, Redacted, Result, Schema } from "effect"

/** The settings that give the bundled server its master key; named in every refusal. */
export const masterKeySettings = "LM_MASTER_KEY or LM_MASTER_KEY_FILE"

/** A master key that is not the base64 of 32 bytes. */
export class InvalidMasterKey extends Schema.TaggedError<InvalidMasterKey>()("InvalidMasterKey", {
  message: Schema.String
}) {}

/** A sealed secret this master key cannot open: sealed with another key, or damaged. */
export class SealedSecretUnreadable extends Schema.TaggedError<SealedSecretUnreadable>()("SealedSecretUnreadable", {
  message: Schema.String
}) {}

const PREFIX = "lm-sealed:v1:"
const NONCE_BYTES = 12
const TAG_BYTES = 16

/** Whether a stored value is sealed (anything else is a secret stored in clear by an older version). */
export const isSealed = (value: string): boolean => value.startsWith(PREFIX)

/** The short id of a master key written into each seal. */
const keyIdOf = (key: Uint8Array): string => createHash("sha256").update(key).digest("hex").slice(0, 8)

/** The master key of a base64 text of 32 bytes (surrounding white space ignored, as in a key file). */
export const parseMasterKey = (base64: string): Result.Result<Redacted.Redacted<Uint8Array>, InvalidMasterKey> => {
  const text = base64.trim()
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? Buffer.from(text, "base64") : Buffer.alloc(0)
  return bytes.length === 32
    ? Result.succeed(Redacted.make(new Uint8Array(bytes), { label: "master key" }))
    : Result.fail(new InvalidMasterKey({ message: `The master key (${masterKeySettings}) must be the base64 of 32 bytes.` }))
}

/** A new random master key, as the base64 text a key file holds. */
export const generateMasterKeyText = (): string => randomBytes(32).toString("base64")

export interface MasterKeyService {
  /** The key's short id (in every seal it makes). */
  readonly id: string
  /** Seals `secret` for `purpose`. */
  readonly seal: (secret: string, purpose: string) => string
  /** Opens a value sealed for `purpose` by this master key. */
  readonly open: (sealed: string, purpose: string) => Result.Result<string, SealedSecretUnreadable>
}

/** Seals and opens with one master key. */
export const makeMasterKey = (key: Redacted.Redacted<Uint8Array>): MasterKeyService => {
  const bytes = Redacted.value(key)
  const id = keyIdOf(bytes)
  const seal = (secret: string, purpose: string): string => {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv("aes-256-gcm", bytes, nonce)
    cipher.setAAD(Buffer.from(purpose, "utf8"))
    const body = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()])
    return `${PREFIX}${id}:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64url")}`
  }
  const open = (sealed: string, purpose: string): Result.Result<string, SealedSecretUnreadable> => {
    const unreadable = (why: string) => Result.fail(new SealedSecretUnreadable({ message: why }))
    if (!isSealed(sealed)) return unreadable(`The ${purpose} is not sealed.`)
    const rest = sealed.slice(PREFIX.length)
    const colon = rest.indexOf(":")
    const sealedWith = rest.slice(0, colon)
    if (colon === -1 || sealedWith !== id) {
      return unreadable(
        `The ${purpose} in the store is sealed with another master key (id ${sealedWith || "?"}, this one is ${id}): ` +
          `start with the master key it was sealed with (${masterKeySettings}).`
      )
    }
    const raw = Buffer.from(rest.slice(colon + 1), "base64url")
    if (raw.length < NONCE_BYTES + TAG_BYTES) return unreadable(`The sealed ${purpose} is damaged.`)
    try {
      const decipher = createDecipheriv("aes-256-gcm", bytes, raw.subarray(0, NONCE_BYTES))
      decipher.setAAD(Buffer.from(purpose, "utf8"))
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES))
      const plain = Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), decipher.final()])
      return Result.succeed(plain.toString("utf8"))
    } catch {
      return unreadable(`The sealed ${purpose} is damaged or was not sealed for it.`)
    }
  }
  return { id, seal, open }
}

/**
 * The master key. An engine given none gets a random one for the life of the process: enough for a store that
 * keeps nothing (memory), while a durable store written with it refuses to open with another one (the refusal
 * names the setting).
 */
export class MasterKey extends Context.Service<MasterKey, MasterKeyService>()("@lm/domain/MasterKey") {
  /** This master key. */
  static readonly layer = (key: Redacted.Redacted<Uint8Array>): Layer.Layer<MasterKey> =>
    Layer.succeed(MasterKey, makeMasterKey(key))

  /** A random master key for this process only. */
  static readonly layerEphemeral: Layer.Layer<MasterKey> = Layer.sync(MasterKey, () =>
    makeMasterKey(Redacted.make(new Uint8Array(randomBytes(32)), { label: "master key" })))

  /** Opens a sealed value as an effect. */
  static readonly open = (sealed: string, purpose: string) =>
    Effect.flatMap(Effect.service(MasterKey), (key) => Effect.fromResult(key.open(sealed, purpose)))
}
