/**
 * Secrets at rest (CONTRACT §5, §13): the master key seals the signing seed with AES-256-GCM; the store never
 * holds the seed in clear, a store sealed with one master key refuses another, seeds stored in clear by an older
 * version are sealed at start, and a retired key is no longer published nor accepted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, Redacted, Result } from "effect"
import { MasterKey, Ports, Secrets, Signer, SigningKey, SigningKeys, Token } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"

const keyOf = (byte: number) => Redacted.make(new Uint8Array(32).fill(byte))

describe("sealing with the master key", () => {
  const master = Secrets.makeMasterKey(keyOf(1))

  it("opens what it sealed, for the same purpose only; the sealed text does not contain the secret", () => {
    const sealed = master.seal("the seed", "signing seed k1")
    expect(Secrets.isSealed(sealed)).toBe(true)
    expect(sealed).not.toContain("the seed")
    expect(Buffer.from(sealed.split(":").at(-1)!, "base64url").toString("latin1")).not.toContain("the seed")
    expect(master.open(sealed, "signing seed k1")).toEqual(Result.succeed("the seed"))
    expect(Result.isFailure(master.open(sealed, "signing seed k2"))).toBe(true)
    // A fresh nonce each time: the same secret seals differently.
    expect(master.seal("the seed", "signing seed k1")).not.toBe(sealed)
  })

  it("refuses another master key naming the setting, and a damaged seal", () => {
    const sealed = master.seal("the seed", "p")
    const other = Secrets.makeMasterKey(keyOf(2)).open(sealed, "p")
    expect(Result.isFailure(other) && other.failure.message).toMatch(/another master key.*LM_MASTER_KEY/)
    const flipped = sealed.slice(0, -2) + (sealed.endsWith("A") ? "B" : "A") + sealed.slice(-1)
    const damaged = master.open(flipped, "p")
    expect(Result.isFailure(damaged) && damaged.failure.message).toMatch(/damaged/)
  })

  it("reads a master key only from the base64 of 32 bytes", () => {
    expect(Result.isSuccess(Secrets.parseMasterKey(Secrets.generateMasterKeyText()))).toBe(true)
    expect(Result.isSuccess(Secrets.parseMasterKey(`${Buffer.alloc(32, 7).toString("base64")}\n`))).toBe(true)
    for (const bad of ["", "not base64!", Buffer.alloc(31).toString("base64"), Buffer.alloc(33).toString("base64")]) {
      expect(Result.isFailure(Secrets.parseMasterKey(bad))).toBe(true)
    }
  })
})

describe("SigningKeys on a store", () => {
  /** The signing keys over `store` with the master key `byte`. */
  const signingKeys = (store: Layer.Layer<Ports.SigningKeyRepository>, byte: number, signingKey?: string) =>
    SigningKeys.layer(signingKey === undefined ? {} : { signingKey: Redacted.make(signingKey) }).pipe(
      Layer.provide(MasterKey.layer(keyOf(byte))),
      Layer.provide(store)
    )

  /** One memory store kept across several engine starts in the test. */
  const withStore = <A, E>(body: (store: Layer.Layer<Ports.SigningKeyRepository>) => Effect.Effect<A, E>) =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(MemoryStore.layer)
      return yield* body(Layer.succeedContext(context))
    }))

  const storedSeeds = Effect.map(Effect.service(Ports.SigningKeyRepository), (repo) => repo.list)

  it.effect("stores the seed sealed, never in clear, and opens it again with the same master key", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const seed = Buffer.alloc(32, 9).toString("base64")
        const kid = yield* Effect.scoped(Effect.map(Layer.build(signingKeys(store, 1, seed)), () => SigningKey.signingKeyFromSeed(new Uint8Array(32).fill(9)).kid))
        const rows = yield* Effect.flatten(Effect.provide(storedSeeds, store))
        expect(rows.map((r) => r.kid)).toEqual([kid])
        expect(rows.every((r) => Secrets.isSealed(r.seed) && !r.seed.includes(seed))).toBe(true)
        // A later start with the same master key signs with the stored key.
        const current = yield* Effect.scoped(Effect.flatMap(Layer.build(signingKeys(store, 1)), (ctx) =>
          Effect.provide(Effect.flatMap(Effect.service(Signer), (s) => s.current), Layer.succeedContext(ctx))))
        expect(current.kid).toBe(kid)
      })
    ))

  it.effect("refuses to start with another master key, naming the setting", () =>
    withStore((store) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Layer.build(signingKeys(store, 1)))
        const exit = yield* Effect.exit(Effect.scoped(Layer.build(signingKeys(store, 2))))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(String(Exit.isFailure(exit) ? exit.cause : "")).toMatch(/LM_MASTER_KEY/)
      })
    ))

  it.effect("seals a seed an older version stored in clear, and keeps signing with it", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const legacy = SigningKey.generateSigningKey()
        const clear = Redacted.value(SigningKey.seedBase64(legacy))
        yield* Effect.provide(
          Effect.flatMap(Effect.service(Ports.SigningKeyRepository), (repo) =>
            repo.insert({ kid: legacy.kid, seed: clear, publicKey: SigningKey.publicKeyBase64(legacy.publicKey), current: true, createdAt: 0 })),
          store
        )
        const current = yield* Effect.scoped(Effect.flatMap(Layer.build(signingKeys(store, 1)), (ctx) =>
          Effect.provide(Effect.flatMap(Effect.service(Signer), (s) => s.current), Layer.succeedContext(ctx))))
        expect(current.kid).toBe(legacy.kid)
        const rows = yield* Effect.flatten(Effect.provide(storedSeeds, store))
        expect(rows.map((r) => [r.kid, Secrets.isSealed(r.seed), r.seed.includes(clear)])).toEqual([[legacy.kid, true, false]])
      })
    ))

  it.effect("retire unlists an old key: it is no longer published and its tokens no longer verify; the current key cannot be retired", () =>
    withStore((store) =>
      Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(signingKeys(store, 1))
        yield* Effect.gen(function*() {
          const signer = yield* Signer
          const keys = yield* SigningKeys
          const old = (yield* signer.current).kid
          const token = yield* signer.signToken(Token.download({ releaseId: 1, licenseId: 2, issuedAt: Math.floor((yield* Clock.currentTimeMillis) / 1000) }))
          expect((yield* signer.verifyToken(token)).ok).toBe(true)
          const fresh = yield* keys.rotate
          expect((yield* signer.verifyToken(token)).ok).toBe(true)

          const refused = yield* Effect.flip(keys.retire(fresh))
          expect(refused.message).toMatch(/current signing key: rotate first/)
          const unknown = yield* Effect.flip(keys.retire("0000000000000000"))
          expect(unknown.message).toMatch(/No signing key/)

          yield* keys.retire(old)
          expect((yield* signer.publishedKeys).map((k) => k.kid)).toEqual([fresh])
          expect((yield* signer.verifyToken(token)).ok).toBe(false)
        }).pipe(Effect.provide(Layer.succeedContext(ctx)))
      }))
    ))
})
