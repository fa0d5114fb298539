/** The domain's `ReleaseRepository` on `lm_releases`. */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { SqlError } from "effect/sql/SqlError"
import { Errors, Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, tableOf } from "./rows.js"

/** `lm_releases` (an artifact's size is an `int8`). */
const releases = tableOf(Model.Release, { generated: ["id"], read: { size: Schema.NullOr(Int8) } })
const ReleaseRow = releases.Row

const releaseRows = rowsOf(ReleaseRow, "lm_releases")
const firstRelease = firstOf(ReleaseRow, "lm_releases")
const oneRelease = oneOf(ReleaseRow, "lm_releases")
const count = oneOf(Count, "a count")


export const layer = Layer.effect(
  Ports.ReleaseRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    const releaseColumns = (r: Model.ReleaseDraft) => releases.columns(r, date, (json) => sql.json(json))

    const uniqueVersion = <A>(effect: Effect.Effect<A, SqlError>) =>
      Effect.catchIf(effect, (e) => e.reason._tag === "UniqueViolation", () => Effect.fail(Errors.releaseExists()))

    const where = (q: Ports.ReleaseQuery) => {
      const filters = [
        ...(q.productId === undefined ? [] : [sql`product_id = ${q.productId}`]),
        ...(q.channels === undefined ? [] : [q.channels.length === 0 ? sql`FALSE` : sql`channel IN ${sql.in(q.channels)}`])
      ]
      return filters.length === 0 ? sql`TRUE` : sql.and(filters)
    }

    return Ports.ReleaseRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_releases ${sql.insert(releaseColumns(draft))} RETURNING *`.pipe(
          uniqueVersion,
          Effect.flatMap(oneRelease),
          orUnavailable
        ),
      findById: (id) => sql`SELECT * FROM lm_releases WHERE id = ${id}`.pipe(Effect.flatMap(firstRelease), orUnavailable),
      delete: (id) => sql`DELETE FROM lm_releases WHERE id = ${id} RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), orUnavailable),
      findByVersion: (productId, version) =>
        sql`SELECT * FROM lm_releases WHERE product_id = ${productId} AND version = ${version}`.pipe(
          Effect.flatMap(firstRelease),
          orUnavailable
        ),
      list: (q) =>
        Effect.all({
          items: sql`SELECT * FROM lm_releases WHERE ${where(q)}
            ORDER BY version_key DESC, id DESC LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`.pipe(
            Effect.flatMap(releaseRows)
          ),
          total: sql`SELECT count(*) AS n FROM lm_releases WHERE ${where(q)}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
    })
  })
)
