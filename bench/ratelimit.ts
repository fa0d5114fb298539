/**
 * What rate limits cost validate (issue 17: limits on ≥ 0.9 × limits off, same run, on each store), in process:
 * the engine of the bundled server with limits on (so high that nothing is refused), on the memory store, on
 * PGlite, on PostgreSQL (`DATABASE_URL`; buckets shared through the database, reconciled every 200 ms) and on the
 * memory store with buckets shared through Redis (`REDIS_URL`). Each round times `Licensing.validate` alone
 * ("off") and the public guard's `RateLimiter.admitPublic` followed by the same validate ("on"), one right after
 * the other, in `BENCH_CONNECTIONS` (64) fibers, each fiber its own client IP and license key (128 buckets);
 * the ratio of each round's pair is taken and the median of `BENCH_RATELIMIT_ROUNDS` (5) rounds printed. Without
 * HTTP around it the limiter's share of a request is larger than over the wire, so this ratio bounds the
 * over-HTTP one from below. Last, `admitPublic` alone: its time per request, set against the time a request takes
 * over HTTP, gives the share the limiter can take of a request whatever the machine's load.
 *
 * Run: `nice -n 10 node bench/ratelimit.ts` (after `npx tsc -b`). Settings: BENCH_RATELIMIT_SECONDS (per timing,
 * default 1), BENCH_RATELIMIT_ROUNDS (5), BENCH_CONNECTIONS (64), DATABASE_URL, REDIS_URL.
 */
import { Effect, Layer, Redacted } from "effect"
import { Engine, Licenses, Licensing, RateLimit, RateLimiter } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerOnClient, layerPostgresStore, PgliteTemplate } from "@lm/storage-pg"
import { layerRedisRateLimits } from "../packages/http/src/server/RedisRateLimits.ts"
import { fixed, markdownTable, median } from "./stats.ts"
import { envNumber, freshPostgresDatabase, machineLine } from "./support.ts"

const seconds = envNumber("BENCH_RATELIMIT_SECONDS", 1)
const rounds = envNumber("BENCH_RATELIMIT_ROUNDS", 5)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const databaseUrl = process.env.DATABASE_URL ?? ""
const redisUrl = process.env.REDIS_URL ?? ""

const huge = { perMinute: 1_000_000_000 }
const rateLimits: Engine.RateLimitOptions = {
  settings: { ...RateLimit.defaultRateLimitSettings, perIp: huge, perKey: huge, perApiKey: huge },
  syncEveryMillis: 200
}

/** Operations per second of `op` in `workers` fibers for `durationSeconds`. */
const throughput = <E, R>(durationSeconds: number, workers: number, op: (worker: number) => Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    let count = 0
    const started = performance.now()
    const deadline = started + durationSeconds * 1000
    const worker = (w: number) =>
      Effect.gen(function*() {
        while (performance.now() < deadline) {
          yield* op(w)
          count++
        }
      })
    yield* Effect.forEach(Array.from({ length: workers }, (_, i) => i), worker, { concurrency: "unbounded", discard: true })
    return count / ((performance.now() - started) / 1000)
  })

const measure = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const limiter = yield* RateLimiter
    const keys: Array<string> = []
    for (let i = 0; i < connections; i++) keys.push((yield* licenses.create({})).license.key)
    const ipOf = (w: number) => `10.0.${w >> 8}.${w & 255}`
    const off = (w: number) => licensing.validate({ licenseKey: keys[w]!, ipAddress: ipOf(w) })
    const on = (w: number) =>
      Effect.andThen(limiter.admitPublic({ endpoint: "validate", ip: ipOf(w), licenseKey: keys[w] }), off(w))
    yield* throughput(seconds, connections, off)
    yield* throughput(seconds, connections, on)
    const pairs: Array<{ off: number; on: number }> = []
    for (let i = 0; i < rounds; i++) {
      // Alternating which goes first, so that a drift of the machine's load favours neither.
      const first = i % 2 === 0 ? off : on
      const a = yield* throughput(seconds, connections, first)
      const b = yield* throughput(seconds, connections, first === off ? on : off)
      pairs.push(first === off ? { off: a, on: b } : { off: b, on: a })
      process.stderr.write(`${store} round ${i + 1}: off ${fixed(pairs[i]!.off)} ops/s, on ${fixed(pairs[i]!.on)} ops/s\n`)
    }
    // The limiter alone (two buckets a request, the rounds with the shared store running beside it).
    const alone = (w: number) => limiter.admitPublic({ endpoint: "validate", ip: ipOf(w), licenseKey: keys[w] })
    yield* throughput(seconds, connections, alone)
    const admits = median(yield* Effect.forEach(Array.from({ length: 3 }), () => throughput(seconds, connections, alone)))
    return {
      store,
      admits,
      off: median(pairs.map((p) => p.off)),
      on: median(pairs.map((p) => p.on)),
      ratio: median(pairs.map((p) => p.on / p.off)),
      minRatio: Math.min(...pairs.map((p) => p.on / p.off))
    }
  })

interface StoreUnderTest {
  readonly name: string
  readonly open: () => Promise<{ readonly layer: Layer.Layer<any, unknown>; readonly cleanup: () => Promise<void> }>
}

const stores: ReadonlyArray<StoreUnderTest> = [
  { name: "memory", open: async () => ({ layer: MemoryStore.layer, cleanup: async () => {} }) },
  {
    name: "pglite",
    open: async () => ({ layer: layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporary)), cleanup: async () => {} })
  },
  ...(databaseUrl === "" ? [] : [{
    name: "postgres (shared through it)",
    open: async () => {
      const database = await freshPostgresDatabase(databaseUrl, "ratelimit")
      return { layer: layerPostgresStore({ url: database.url }), cleanup: database.drop }
    }
  }]),
  ...(redisUrl === "" ? [] : [{
    name: "memory + Redis (shared through it)",
    open: async () => ({
      layer: Layer.merge(MemoryStore.layer, layerRedisRateLimits(Redacted.make(redisUrl))),
      cleanup: async () => {}
    })
  }])
]

const results = []
for (const store of stores) {
  const { layer, cleanup } = await store.open()
  try {
    results.push(
      await Effect.runPromise(
        measure(store.name).pipe(Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0, rateLimits })), Effect.scoped)
      )
    )
  } finally {
    await cleanup()
  }
}

console.log(`${machineLine()}; ${connections} fibers, ${rounds} rounds of ${seconds} s off + ${seconds} s on\n`)
console.log(markdownTable(
  ["store", "validate, limits off (ops/s)", "limits on (ops/s)", "on ÷ off (median of rounds)", "worst round", "admitPublic alone (ops/s)", "µs per admit"],
  results.map((r) => [r.store, fixed(r.off), fixed(r.on), fixed(r.ratio, 2), fixed(r.minRatio, 2), fixed(r.admits), fixed(1e6 / r.admits, 2)])
))
