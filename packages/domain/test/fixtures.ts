/**
 * Builders and a deterministic random source shared by the domain's tests. The defaults here are written from
 * CONTRACT §3 rather than imported from the domain, so a test that uses them checks the domain's defaults too.
 */
import { Effect, Layer, Result } from "effect"
import { Model, Random, Signer, SigningKey, Tokens } from "@lm/domain"

/** A fixed instant well after the epoch: 2026-01-01T00:00:00Z. */
export const T0 = Date.UTC(2026, 0, 1)
export const SECOND = 1000
export const DAY = 86_400_000

/** An issued license with the contract's default settings, changed by `patch`. */
export const makeLicense = (patch: Partial<Model.License> = {}): Model.License => ({
  id: 1,
  key: "AAAA-BBBB-CCCC-DDDD",
  state: "issued",
  productId: null,
  orderId: null,
  userId: null,
  maxActivations: null,
  overageStrategy: "deny",
  isFloating: false,
  leaseDuration: 600,
  requireHeartbeat: false,
  heartbeatInterval: 600,
  validForDays: null,
  expiresAt: null,
  graceDays: 0,
  meta: {},
  policyId: null,
  entitlements: [],
  activatedAt: null,
  source: "api",
  generatorId: null,
  subscriptionId: null,
  suspendedBy: null,
  createdAt: T0,
  updatedAt: T0,
  revision: 1,
  ...patch
})

let nextMachineId = 1

/** An active, node-locked machine activated at T0, changed by `patch`. */
export const makeMachine = (patch: Partial<Model.Machine> = {}): Model.Machine => ({
  id: nextMachineId++,
  licenseId: 1,
  fingerprint: `fp-${nextMachineId}`,
  name: null,
  hostname: null,
  platform: null,
  appVersion: null,
  ipAddress: null,
  status: "active",
  activatedAt: T0,
  deactivatedAt: null,
  deactivationReason: null,
  lastHeartbeatAt: null,
  leaseExpiresAt: null,
  seatDeadline: null,
  meta: {},
  components: [],
  createdAt: T0,
  ...patch
})

/** mulberry32: a small seeded generator of 32-bit words, good enough for statistical sanity checks. */
export const seededWords = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
}

/** A `Random` whose bytes come from a seeded generator: the same seed gives the same keys and secrets. */
export const seededRandom = (seed: number): Layer.Layer<Random> => {
  const next = seededWords(seed)
  return Layer.succeed(
    Random,
    Random.of({
      bytes: (n) =>
        Effect.sync(() => {
          const out = new Uint8Array(n)
          for (let i = 0; i < n; i++) out[i] = next() & 0xff
          return out
        })
    })
  )
}

/** A `Random` that hands out the given bytes in order, then zeros. */
export const scriptedRandom = (bytes: ReadonlyArray<number>): Layer.Layer<Random> => {
  let at = 0
  return Layer.succeed(
    Random,
    Random.of({
      bytes: (n) =>
        Effect.sync(() => {
          const out = new Uint8Array(n)
          for (let i = 0; i < n; i++) out[i] = at < bytes.length ? bytes[at++]! : 0
          return out
        })
    })
  )
}

/** The success of a Result, or a thrown error naming the failure (for assertions). */
export const successOf = <A, E>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error(`expected a success, got ${JSON.stringify(result.failure)}`)
  return result.success
}

/** The failure of a Result, or a thrown error naming the success (for assertions). */
export const failureOf = <A, E>(result: Result.Result<A, E>): E => {
  if (Result.isSuccess(result)) throw new Error(`expected a failure, got a success`)
  return result.failure
}

/**
 * A `Random` whose i-th call answers bytes all equal to `values[i]`, then seeded bytes: with a 32-character
 * charset each minted key is one character repeated, so a test can aim a mint at a key it chose.
 */
export const repeatedByteRandom = (values: ReadonlyArray<number>, seed = 1): Layer.Layer<Random> => {
  const next = seededWords(seed)
  let call = 0
  return Layer.succeed(
    Random,
    Random.of({
      bytes: (n) =>
        Effect.sync(() => {
          const value = values[call++]
          const out = new Uint8Array(n)
          for (let i = 0; i < n; i++) out[i] = value ?? next() & 0xff
          return out
        })
    })
  )
}

/** `Tokens` signed with a key of their own: what `Licensing` signs its answers with, for tests that build it alone. */
export const freshTokens = Tokens.layer().pipe(Layer.provide(Signer.layerNodeCrypto(SigningKey.generateSeed())))
