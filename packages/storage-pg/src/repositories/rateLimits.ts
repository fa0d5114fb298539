/**
 * The domain's `SharedRateLimits` on `lm_rate_limits`: each round of a server's rate limiter is one statement
 * that advances every bucket of the batch (`tat = max(tat, now) + cost`, the port's rule) and returns the new
 * values. Rows are taken in key order, so two servers' rounds on the same buckets cannot deadlock. Full buckets
 * (a `tat` in the past) are deleted about once a minute, skipping rows a round holds.
 */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"

/** How often full buckets are deleted. */
const cleanEveryMillis = 60_000

export const layer = Layer.effect(
  Ports.SharedRateLimits,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    let cleanedAt = 0
    const clean = (now: number) =>
      sql`
        DELETE FROM lm_rate_limits WHERE key IN (
          SELECT key FROM lm_rate_limits WHERE tat < ${now} FOR UPDATE SKIP LOCKED
        )`.pipe(orUnavailable)
    const advance = (batch: ReadonlyArray<Ports.RateLimitAdvance>, now: number) =>
      Effect.gen(function*() {
        if (batch.length === 0) return []
        if (now - cleanedAt >= cleanEveryMillis) {
          cleanedAt = now
          yield* clean(now)
        }
        const rows = yield* sql<{ key: string; tat: number }>`
          INSERT INTO lm_rate_limits AS r (key, tat)
          SELECT key, ${now}::float8 + cost
          FROM json_to_recordset(${JSON.stringify(batch)}::json) AS b(key text, cost float8)
          ORDER BY key
          ON CONFLICT (key) DO UPDATE SET tat = GREATEST(r.tat, ${now}::float8) + (EXCLUDED.tat - ${now}::float8)
          RETURNING key, tat`.pipe(orUnavailable)
        const tats = new Map(rows.map((row) => [row.key, Number(row.tat)]))
        return batch.map((entry) => tats.get(entry.key) ?? now + entry.cost)
      })
    return { advance }
  })
)
