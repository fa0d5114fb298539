/**
 * The domain's `IdempotencyRepository` on `lm_idempotency_keys`. A claim is one `INSERT … ON CONFLICT DO UPDATE
 * … WHERE expired`: of several processes claiming one key at once, PostgreSQL lets exactly one insert (or take over
 * an expired row); the others read the row that holds it.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { Model } from "@lm/domain"
import { Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, Timestamp } from "./rows.js"

/** A row of `lm_idempotency_keys`. */
const IdempotencyRow = Schema.Struct({
  api_key_id: Int8,
  key: Schema.String,
  request_hash: Schema.String,
  status: Schema.NullOr(Schema.Number),
  content_type: Schema.NullOr(Schema.String),
  body: Schema.NullOr(Schema.String),
  expires_at: Timestamp
})

const firstRow = firstOf(IdempotencyRow, "lm_idempotency_keys")
const count = oneOf(Count, "a count")

const toRecord = (row: typeof IdempotencyRow.Type): Model.IdempotencyRecord => ({
  apiKeyId: row.api_key_id,
  key: row.key,
  requestHash: row.request_hash,
  answer: row.status === null
    ? null
    : { status: row.status, contentType: row.content_type ?? "application/json", body: row.body ?? "" },
  expiresAt: row.expires_at
})

export const layer = Layer.effect(
  Ports.IdempotencyRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    return Ports.IdempotencyRepository.of({
      claim: (claim, now) =>
        Effect.gen(function*() {
          const claimed = yield* sql`
            INSERT INTO lm_idempotency_keys AS k (api_key_id, key, request_hash, expires_at)
            VALUES (${claim.apiKeyId}, ${claim.key}, ${claim.requestHash}, ${date(claim.runningUntil)})
            ON CONFLICT (api_key_id, key) DO UPDATE
              SET request_hash = EXCLUDED.request_hash, status = NULL, content_type = NULL, body = NULL,
                  expires_at = EXCLUDED.expires_at
              WHERE k.expires_at <= ${date(now)}
            RETURNING 1 AS claimed`
          if (claimed.length > 0) return undefined
          const holder = yield* sql`
            SELECT * FROM lm_idempotency_keys WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key}`.pipe(
            Effect.flatMap(firstRow)
          )
          return holder === undefined ? undefined : toRecord(holder)
        }).pipe(orUnavailable),
      complete: (apiKeyId, key, requestHash, answer, expiresAt) =>
        sql`
          UPDATE lm_idempotency_keys
          SET status = ${answer.status}, content_type = ${answer.contentType}, body = ${answer.body},
              expires_at = ${date(expiresAt)}
          WHERE api_key_id = ${apiKeyId} AND key = ${key} AND request_hash = ${requestHash} AND status IS NULL`.pipe(
          Effect.asVoid,
          orUnavailable
        ),
      release: (apiKeyId, key, requestHash) =>
        sql`
          DELETE FROM lm_idempotency_keys
          WHERE api_key_id = ${apiKeyId} AND key = ${key} AND request_hash = ${requestHash} AND status IS NULL`.pipe(
          Effect.asVoid,
          orUnavailable
        ),
      prune: (now) =>
        sql`
          WITH gone AS (DELETE FROM lm_idempotency_keys WHERE expires_at <= ${date(now)} RETURNING 1)
          SELECT count(*) AS n FROM gone`.pipe(Effect.flatMap(count), Effect.map((r) => r.n), orUnavailable)
    })
  })
)
