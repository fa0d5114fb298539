/** The domain's `ReleaseRepository` on `lm_releases`. */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { SqlError } from "effect/sql/SqlError"
import { Errors, Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** The column of each field whose name differs (snake_case). */
const releaseColumnNames = {
  productId: "product_id",
  versionKey: "version_key",
  minAppVersion: "min_app_version",
  contentType: "content_type",
  artifactUrl: "artifact_url",
  artifactKey: "artifact_key",
  releasedAt: "released_at",
  createdAt: "created_at"
} as const

/** A row of `lm_releases`. */
const ReleaseRow = Schema.Struct({
  id: Int8,
  productId: Int8,
  version: Schema.String,
  versionKey: Schema.String,
  channel: Model.ReleaseChannel,
  changelog: Schema.NullOr(Schema.String),
  minAppVersion: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  size: Schema.NullOr(Int8),
  sha256: Schema.NullOr(Schema.String),
  contentType: Schema.NullOr(Schema.String),
  artifactUrl: Schema.NullOr(Schema.String),
  artifactKey: Schema.NullOr(Schema.String),
  releasedAt: Timestamp,
  createdAt: Timestamp,
  entitlements: Model.Entitlements
}).pipe(Schema.encodeKeys(releaseColumnNames))

const releaseRows = rowsOf(ReleaseRow, "lm_releases")
const firstRelease = firstOf(ReleaseRow, "lm_releases")
const oneRelease = oneOf(ReleaseRow, "lm_releases")
const count = oneOf(Count, "a count")


export const layer = Layer.effect(
  Ports.ReleaseRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient

    const releaseColumns = (r: Model.ReleaseDraft) =>
      Struct.renameKeys({
        ...r,
        releasedAt: date(r.releasedAt),
        createdAt: date(r.createdAt),
        entitlements: sql.json(r.entitlements)
      }, releaseColumnNames)

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
