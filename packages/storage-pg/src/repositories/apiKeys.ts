/** The domain's `ApiKeyRepository` on `lm_api_keys` (only hashes of the consumer key and secret are kept). */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, date, firstOf, oneOf, rowsOf, tableOf } from "./rows.js"

/** `lm_api_keys`. */
const apiKeys = tableOf(Model.ApiKey, { generated: ["id"] })
const ApiKeyRow = apiKeys.Row

const apiKeyRows = rowsOf(ApiKeyRow, "lm_api_keys")
const firstApiKey = firstOf(ApiKeyRow, "lm_api_keys")
const oneApiKey = oneOf(ApiKeyRow, "lm_api_keys")
const count = oneOf(Count, "a count")

export const layer = Layer.effect(
  Ports.ApiKeyRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    const countAll = sql`SELECT count(*) AS n FROM lm_api_keys`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
    return Ports.ApiKeyRepository.of({
      insert: (k) =>
        sql`INSERT INTO lm_api_keys ${sql.insert(apiKeys.columns(k))} RETURNING *`.pipe(Effect.flatMap(oneApiKey), orUnavailable),
      findByConsumerKeyHash: (hash) =>
        sql`SELECT * FROM lm_api_keys WHERE consumer_key_hash = ${hash}`.pipe(Effect.flatMap(firstApiKey), orUnavailable),
      list: (page) =>
        Effect.all({
          items: sql`SELECT * FROM lm_api_keys ORDER BY id ASC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`.pipe(
            Effect.flatMap(apiKeyRows)
          ),
          total: countAll
        }).pipe(orUnavailable),
      delete: (id) => sql`DELETE FROM lm_api_keys WHERE id = ${id} RETURNING id`.pipe(Effect.map((r) => r.length > 0), orUnavailable),
      deleteRemembered: (id, at) =>
        sql`
          WITH gone AS (DELETE FROM lm_api_keys WHERE id = ${id} RETURNING consumer_key_hash),
          remembered AS (
            INSERT INTO lm_deleted_api_keys (consumer_key_hash, deleted_at)
            SELECT consumer_key_hash, ${date(at)} FROM gone
            ON CONFLICT (consumer_key_hash) DO NOTHING
          )
          SELECT count(*) AS n FROM gone`.pipe(Effect.flatMap(count), Effect.map((r) => r.n > 0), orUnavailable),
      wasDeleted: (hash) =>
        sql`SELECT count(*) AS n FROM lm_deleted_api_keys WHERE consumer_key_hash = ${hash}`.pipe(
          Effect.flatMap(count),
          Effect.map((r) => r.n > 0),
          orUnavailable
        ),
      count: countAll.pipe(orUnavailable),
      touch: (id, at) => sql`UPDATE lm_api_keys SET last_access_at = ${date(at)} WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable)
    })
  })
)
