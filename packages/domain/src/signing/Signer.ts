/**
 * The `Signer` service: signs tokens with the current key of a {@link KeyRing} and verifies the
 * server's own tokens (e.g. download tokens) against every accepted key.
 *
 * Two implementations, byte-identical output (Ed25519 is deterministic):
 * - {@link Signer.layerNodeCrypto}: node:crypto with KeyObjects imported once per key ring; the
 *   server's default (about ten times faster than the pure-JS path).
 * - {@link Signer.layerNoble}: @noble/ed25519's async API (SHA-512 from WebCrypto), for runtimes
 *   without node:crypto's Ed25519.
 *
 * The ring can be swapped at run time ({@link SignerService.setKeyRing}) after a key rotation;
 * each token is signed and labelled (`kid`) from one snapshot of the ring, so the two always match.
 * The seed lives only inside the layer's closure and the ring's `Redacted`: it appears in no
 * string, JSON or inspection of the service.
 *
 * @since 0.1.0
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign as nodeSign, verify as nodeVerify } from "node:crypto"
import { getPublicKeyAsync, signAsync, verifyAsync } from "@noble/ed25519"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { utf8Encode } from "../verify/encoding.js"
import type { VerifyResult } from "../verify/index.js"
import type { PayloadOf, PublishedKey, TokenType } from "../verify/payloads.js"
import { checkTimes, decodeToken } from "../verify/token.js"
import {
  type KeyRing,
  makeKeyRing,
  type PublicKeyInfo,
  publicKeySpki,
  publishedKeys,
  seedPkcs8,
  SPKI_ED25519_PREFIX,
  signingKeyFromSeed
} from "./SigningKey.js"
import { type Claims, compact, payloadJson, signingBytes, signingInput } from "./Token.js"

/** Options of {@link SignerService.verifyToken}. */
export interface SignerVerifyOptions<T extends TokenType> {
  /** Accept only tokens of this `typ` (else `wrong_type`). */
  readonly type?: T
  /** Allowed clock drift for `iat` in seconds (default 300). */
  readonly driftSeconds?: number
}

/** What the `Signer` offers. */
export interface SignerService {
  /** The current signing key: its `kid` and raw 32-byte public key. */
  readonly current: Effect.Effect<PublicKeyInfo>
  /** Every accepted key in `/public-key` form (`{kid, public_key, current}`), current first. */
  readonly publishedKeys: Effect.Effect<ReadonlyArray<PublishedKey>>
  /** The raw 64-byte Ed25519 signature of `message` (a string is signed as UTF-8) with the current key. */
  readonly sign: (message: string | Uint8Array) => Effect.Effect<Uint8Array>
  /** A compact token of `claims`, its `kid` set to the key that signs it. */
  readonly signToken: (claims: Claims) => Effect.Effect<string>
  /**
   * {@link signToken} at once, on the caller's stack, when the engine signs synchronously (node:crypto);
   * undefined when it cannot (the noble engine is asynchronous): the caller then uses `signToken`.
   */
  readonly signTokenNow: (claims: Claims) => string | undefined
  /**
   * Verifies a token against the accepted keys and the `Clock` (see `verify/index.ts` for the
   * reasons). No clock roll-back floor: this is the server's own clock.
   */
  readonly verifyToken: <T extends TokenType = TokenType>(
    token: string,
    options?: SignerVerifyOptions<T>
  ) => Effect.Effect<VerifyResult<PayloadOf<T>>>
  /** Replaces the key ring, e.g. after `lm signing-keys rotate`. */
  readonly setKeyRing: (ring: KeyRing) => Effect.Effect<void>
}

/** The signing primitive of one key ring. */
interface Engine {
  readonly sign: (message: Uint8Array) => Effect.Effect<Uint8Array>
  /** The same signature at once, when the engine can (node:crypto). */
  readonly signNow?: (message: Uint8Array) => Uint8Array
  readonly verify: (kid: string, signature: Uint8Array, message: Uint8Array) => Effect.Effect<boolean>
}

interface State {
  readonly ring: KeyRing
  readonly engine: Engine
  readonly published: ReadonlyArray<PublishedKey>
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

const mismatch = (kid: string) =>
  Effect.die(new Error(`signing key ${kid}: its public key does not match its seed`))

/** node:crypto engine: the private and public KeyObjects are imported here, once per ring. */
const nodeEngine = (ring: KeyRing): Effect.Effect<Engine> =>
  Effect.suspend(() => {
    const der = Buffer.from(seedPkcs8(Redacted.value(ring.current.seed)))
    const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" })
    der.fill(0)
    const derived = createPublicKey(privateKey).export({ format: "der", type: "spki" })
    if (!sameBytes(derived.subarray(SPKI_ED25519_PREFIX.length), ring.current.publicKey)) {
      return mismatch(ring.current.kid)
    }
    const publics = new Map<string, KeyObject>()
    for (const k of ring.accepted) {
      publics.set(k.kid, createPublicKey({ key: Buffer.from(publicKeySpki(k.publicKey)), format: "der", type: "spki" }))
    }
    const signNow = (message: Uint8Array) => nodeSign(null, message, privateKey)
    return Effect.succeed<Engine>({
      sign: (message) => Effect.sync(() => signNow(message)),
      signNow,
      verify: (kid, signature, message) =>
        Effect.sync(() => {
          const key = publics.get(kid)
          if (key === undefined) return false
          try {
            return nodeVerify(null, message, key, signature)
          } catch {
            return false
          }
        })
    })
  })

/** @noble/ed25519 engine (async API: SHA-512 from WebCrypto, no global hash wiring). */
const nobleEngine = (ring: KeyRing): Effect.Effect<Engine> =>
  Effect.gen(function*() {
    const seed = Redacted.value(ring.current.seed)
    const derived = yield* Effect.promise(() => getPublicKeyAsync(seed))
    if (!sameBytes(derived, ring.current.publicKey)) return yield* mismatch(ring.current.kid)
    const publics = new Map(ring.accepted.map((k) => [k.kid, k.publicKey] as const))
    return {
      sign: (message) => Effect.promise(() => signAsync(message, seed)),
      verify: (kid, signature, message) =>
        Effect.promise(async () => {
          const key = publics.get(kid)
          if (key === undefined) return false
          return verifyAsync(signature, message, key, { zip215: false }).catch(() => false)
        })
    }
  })

const toRing = (keys: KeyRing | Uint8Array): KeyRing =>
  keys instanceof Uint8Array ? makeKeyRing(signingKeyFromSeed(keys)) : keys

const make = (build: (ring: KeyRing) => Effect.Effect<Engine>) =>
(keys: KeyRing | Uint8Array): Effect.Effect<SignerService> =>
  Effect.gen(function*() {
    const prepare = (ring: KeyRing) =>
      Effect.map(build(ring), (engine): State => ({ ring, engine, published: publishedKeys(ring) }))
    let state = yield* prepare(toRing(keys))

    const sign = (message: string | Uint8Array) =>
      Effect.suspend(() => state.engine.sign(typeof message === "string" ? utf8Encode(message) : message))

    const signToken = (claims: Claims) =>
      Effect.suspend(() => {
        const snapshot = state
        const head = signingInput(payloadJson(claims, snapshot.ring.current.kid))
        return Effect.map(snapshot.engine.sign(signingBytes(head)), (signature) => compact(head, signature))
      })

    const signTokenNow = (claims: Claims): string | undefined => {
      const snapshot = state
      const signNow = snapshot.engine.signNow
      if (signNow === undefined) return undefined
      const head = signingInput(payloadJson(claims, snapshot.ring.current.kid))
      return compact(head, signNow(signingBytes(head)))
    }

    const verifyToken = <T extends TokenType = TokenType>(
      token: string,
      options: SignerVerifyOptions<T> = {}
    ): Effect.Effect<VerifyResult<PayloadOf<T>>> =>
      Effect.suspend(() => {
        const decoded = decodeToken(token)
        if (decoded === undefined) return Effect.succeed({ ok: false, reason: "malformed" } as const)
        const payload = decoded.payload as PayloadOf<T>
        const snapshot = state
        if (!snapshot.ring.accepted.some((k) => k.kid === payload.kid)) {
          return Effect.succeed({ ok: false, reason: "unknown_kid" } as const)
        }
        return Effect.flatMap(
          snapshot.engine.verify(payload.kid, decoded.signature, decoded.message),
          (valid): Effect.Effect<VerifyResult<PayloadOf<T>>> => {
            if (!valid) return Effect.succeed({ ok: false, reason: "bad_signature" })
            if (options.type !== undefined && payload.typ !== options.type) {
              return Effect.succeed({ ok: false, reason: "wrong_type", payload })
            }
            return Effect.map(Clock.currentTimeMillis, (ms) => {
              const drift = options.driftSeconds
              const late = checkTimes(payload, Math.floor(ms / 1000), drift === undefined ? {} : { driftSeconds: drift })
              return late === undefined ? { ok: true, payload } : { ok: false, reason: late, payload }
            })
          }
        )
      })

    return Signer.of({
      current: Effect.sync(() => ({ kid: state.ring.current.kid, publicKey: state.ring.current.publicKey })),
      publishedKeys: Effect.sync(() => state.published),
      sign,
      signToken,
      signTokenNow,
      verifyToken,
      setKeyRing: (ring) =>
        Effect.map(prepare(ring), (next) => {
          state = next
        })
    })
  })

/** Builds a node:crypto signer from a key ring or a bare 32-byte seed. */
export const makeNodeCryptoSigner: (keys: KeyRing | Uint8Array) => Effect.Effect<SignerService> = make(nodeEngine)

/** Builds a @noble/ed25519 signer from a key ring or a bare 32-byte seed. */
export const makeNobleSigner: (keys: KeyRing | Uint8Array) => Effect.Effect<SignerService> = make(nobleEngine)

/** Signs and verifies the service's tokens (CONTRACT.md §5). */
export class Signer extends Context.Service<Signer, SignerService>()("@lm/domain/signing/Signer") {
  /** node:crypto signer (the server's default). */
  static readonly layerNodeCrypto = (keys: KeyRing | Uint8Array): Layer.Layer<Signer> =>
    Layer.effect(Signer, makeNodeCryptoSigner(keys))

  /** Portable @noble/ed25519 signer; same tokens, slower. */
  static readonly layerNoble = (keys: KeyRing | Uint8Array): Layer.Layer<Signer> =>
    Layer.effect(Signer, makeNobleSigner(keys))
}
