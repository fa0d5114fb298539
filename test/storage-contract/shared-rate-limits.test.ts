/**
 * The `SharedRateLimits` port on every place it lives: memory, PGlite and PostgreSQL (`DATABASE_URL`), Redis
 * (`REDIS_URL`). `advance` applies `tat = max(tat, now) + cost` per bucket atomically and returns the new values
 * in the batch's order; rounds from several processes at once add up exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { Ports } from "@lm/domain"
import { SharedRateLimits } from "@lm/storage-memory"
import { layerOnClient, layerSharedRateLimits } from "@lm/storage-pg"
import { layerRedisRateLimits } from "@lm/server"
import { T0 } from "./fixtures.js"
import { reusedPgliteClients, reusedPostgresStores } from "./pg-support.js"
import { serviceUrl } from "../support/services.js"

const databaseUrl = serviceUrl("DATABASE_URL")
const redisUrl = serviceUrl("REDIS_URL")

const sharedRateLimitsContract = (name: string, makeLayer: () => Layer.Layer<never, unknown>) =>
  describe(`SharedRateLimits: ${name}`, () => {
    const withPort = <A, E>(body: (advance: NonNullable<(typeof Ports.SharedRateLimits)["Service"]["advance"]>) => Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const { advance } = yield* Ports.SharedRateLimits
        assert.isDefined(advance)
        return yield* body(advance!)
      }).pipe(Effect.provide(Layer.fresh(makeLayer())))

    // Each run its own bucket names: Redis keeps keys between runs.
    const run = `${process.pid}-${Date.now()}`

    it.live("starts an unknown bucket at now, adds to a future tat, restarts a past one at now; returns in batch order", () =>
      withPort((advance) =>
        Effect.gen(function*() {
          const a = `ip:a-${run}`
          const b = `key:b-${run}`
          assert.deepStrictEqual(yield* advance([{ key: a, cost: 1000 }, { key: b, cost: 500.5 }], T0), [T0 + 1000, T0 + 500.5])
          assert.deepStrictEqual(yield* advance([{ key: b, cost: 0 }, { key: a, cost: 250 }], T0 + 10), [T0 + 500.5, T0 + 1250])
          // 1 s later the bucket of `a` is full again (its tat passed): it starts again from now.
          assert.deepStrictEqual(yield* advance([{ key: a, cost: 100 }], T0 + 5000), [T0 + 5100])
          assert.deepStrictEqual(yield* advance([], T0), [])
        })
      ))

    it.live("concurrent rounds on the same buckets add up exactly", () =>
      withPort((advance) =>
        Effect.gen(function*() {
          const keys = [0, 1, 2].map((i) => `key:c${i}-${run}`)
          // Each round names the buckets in another order (two servers' rounds meeting on one database).
          yield* Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i % 2 === 0 ? keys : [...keys].reverse()),
            (order) => advance(order.map((key) => ({ key, cost: 10 })), T0),
            { concurrency: 10, discard: true }
          )
          assert.deepStrictEqual(yield* advance(keys.map((key) => ({ key, cost: 0 })), T0), keys.map(() => T0 + 200))
        })
      ), 60_000)
  })

sharedRateLimitsContract("memory", () => SharedRateLimits.layer)
sharedRateLimitsContract(
  "pglite",
  (() => {
    const clients = reusedPgliteClients()
    return () => Layer.merge(layerOnClient, layerSharedRateLimits).pipe(Layer.provide(clients()))
  })()
)
describe.skipIf(databaseUrl === "")("on PostgreSQL (DATABASE_URL)", () => {
  sharedRateLimitsContract("postgres", reusedPostgresStores(databaseUrl))
})
describe.skipIf(redisUrl === "")("on Redis (REDIS_URL)", () => {
  sharedRateLimitsContract("redis", () => layerRedisRateLimits(Redacted.make(redisUrl)))
})
