/** The domain's `SigningKeyRepository` on `lm_signing_keys`: at most one key is `current` (a unique index). */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { rowsOf, tableOf } from "./rows.js"

/** A row of `lm_signing_keys`. */
const signingKeys = tableOf(Model.StoredSigningKey)
const SigningKeyRow = signingKeys.Row

const signingKeyRows = rowsOf(SigningKeyRow, "lm_signing_keys")

export const layer = Layer.effect(
  Ports.SigningKeyRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    return Ports.SigningKeyRepository.of({
      list: sql`SELECT * FROM lm_signing_keys ORDER BY created_at, kid`.pipe(Effect.flatMap(signingKeyRows), orUnavailable),
      insert: (key) =>
        sql.withTransaction(
          Effect.gen(function*() {
            if (key.current) yield* sql`UPDATE lm_signing_keys SET current = false WHERE current`
            yield* sql`INSERT INTO lm_signing_keys ${
              sql.insert(signingKeys.columns(key))
            } ON CONFLICT (kid) DO UPDATE SET current = EXCLUDED.current`
          })
        ).pipe(orUnavailable),
      replaceSeed: (kid, seed) => sql`UPDATE lm_signing_keys SET seed = ${seed} WHERE kid = ${kid}`.pipe(Effect.asVoid, orUnavailable),
      retire: (kid) =>
        sql`DELETE FROM lm_signing_keys WHERE kid = ${kid} AND NOT current RETURNING kid`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        )
    })
  })
)
