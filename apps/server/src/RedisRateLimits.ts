/**
 * The domain's `SharedRateLimits` on Redis (`LM_REDIS_URL`), through `redis` (node-redis, Redis' own client).
 * Each round of a server's rate limiter is one `EVAL` of {@link advanceScript}, which applies the port's rule
 * (`tat = max(tat, now) + cost`) to every bucket of the batch atomically and returns the new values; a bucket's
 * key expires once it is full again. Redis unreachable: the round fails with `StorageUnavailable` (logged once
 * per outage) and the limiter carries on locally, sending its takes when Redis is back; requests never wait for
 * Redis.
 */
import { Effect, Layer, Redacted } from "effect"
import { Errors, Ports } from "@lm/domain"

/** Prefix of the buckets' keys, so that they can share a Redis database with other data. */
export const keyPrefix = "lm:rl:"

/**
 * KEYS: the buckets; ARGV[1]: now (epoch ms), ARGV[1 + i]: the cost of KEYS[i]. Returns the new `tat`s as
 * strings (a Lua number would be truncated to an integer on the way back). A key lives until its bucket is full.
 */
export const advanceScript = `
local now = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local tat = tonumber(redis.call('GET', key) or ARGV[1])
  if tat < now then tat = now end
  tat = tat + tonumber(ARGV[i + 1])
  if tat > now then
    redis.call('SET', key, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
  end
  out[i] = string.format('%.3f', tat)
end
return out`

/** How long a round may wait for Redis before it is given up (and sent again next round). */
const roundTimeoutMillis = 2000

export const layerRedisRateLimits = (url: Redacted.Redacted): Layer.Layer<never> =>
  Layer.effect(
    Ports.SharedRateLimits,
    Effect.gen(function*() {
      // Loaded only when Redis is configured: node-redis is some 650 modules that every other start would load.
      const { createClient } = yield* Effect.promise(() => import("redis"))
      const client = createClient({
        url: Redacted.value(url),
        // A command while disconnected fails at once rather than queueing: the limiter keeps its takes instead.
        disableOfflineQueue: true,
        socket: { connectTimeout: roundTimeoutMillis, reconnectStrategy: (retries) => Math.min(100 * (retries + 1), 2000) }
      })
      let down = false
      const outage = (error: unknown) =>
        Effect.suspend(() => {
          if (down) return Effect.void
          down = true
          return Effect.logWarning(`rate limits: Redis cannot be reached (${error instanceof Error ? error.message : String(error)}); limiting per process until it is back`)
        })
      // node-redis emits connection errors as events; reconnecting is its own (reconnectStrategy).
      client.on("error", () => {})
      // Started once; waited for a little at start, so that the first rounds are shared. Redis down at start does
      // not stop the server: it limits per process and node-redis keeps reconnecting.
      const connecting = client.connect().then(() => undefined)
      connecting.catch(() => {}) // a rejection after the wait below is not unhandled
      yield* Effect.acquireRelease(
        Effect.tryPromise(() => connecting).pipe(
          Effect.timeout(roundTimeoutMillis),
          Effect.catch((error) => outage(error))
        ),
        () => Effect.promise(() => client.close().catch(() => {}))
      )
      const unavailable = new Errors.StorageUnavailable({ message: "Redis cannot be reached." })
      const advance = (batch: ReadonlyArray<Ports.RateLimitAdvance>, now: number) =>
        batch.length === 0
          ? Effect.succeed([])
          : Effect.tryPromise({
            try: () =>
              client.eval(advanceScript, {
                keys: batch.map((entry) => keyPrefix + entry.key),
                arguments: [String(now), ...batch.map((entry) => String(entry.cost))]
              }),
            catch: (error) => error
          }).pipe(
            Effect.timeout(roundTimeoutMillis),
            Effect.map((reply) => (reply as ReadonlyArray<string>).map(Number)),
            Effect.tap(() =>
              Effect.suspend(() => {
                if (!down) return Effect.void
                down = false
                return Effect.logInfo("rate limits: Redis reachable again; limits are shared again")
              })
            ),
            Effect.catch((error) => Effect.andThen(outage(error), Effect.fail(unavailable)))
          )
      return { advance }
    })
  )
