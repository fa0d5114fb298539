/**
 * The domain's `SharedRateLimits` in memory: buckets shared by several engines in one process (an embedder
 * running more than one, and tests). One process alone needs none: its rate limiter's own buckets are exact.
 */
import { Effect, Layer } from "effect"
import { Ports, RateLimit } from "@lm/domain"

/** Fresh shared buckets (each build of the layer is its own set). */
export const layer: Layer.Layer<never> = Layer.sync(Ports.SharedRateLimits, () => {
  const tats = new Map<string, number>()
  return {
    advance: (batch, now) =>
      Effect.sync(() => {
        // Full buckets are forgotten as the map is used, so it holds only buckets still refilling.
        if (tats.size > 10_000) for (const [key, tat] of tats) if (tat <= now) tats.delete(key)
        return batch.map(({ cost, key }) => {
          const tat = RateLimit.advance(tats.get(key), now, cost)
          tats.set(key, tat)
          return tat
        })
      })
  }
})
