/** The source of randomness the domain draws keys and secrets from, injected so tests can be deterministic. */
import { Context, Effect, Layer } from "effect"

export class Random extends Context.Service<Random, {
  /** `n` bytes from a cryptographically secure source. */
  readonly bytes: (n: number) => Effect.Effect<Uint8Array>
}>()("@lm/domain/Random") {
  /** The platform's cryptographic random source (Web Crypto `getRandomValues`). */
  static readonly layerCrypto = Layer.succeed(
    Random,
    Random.of({
      bytes: (n) => Effect.sync(() => globalThis.crypto.getRandomValues(new Uint8Array(n)))
    })
  )
}
