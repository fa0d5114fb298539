/** The domain's `GeneratorRepository` on `lm_generators`. */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** The column of each field of a generator whose name differs (snake_case), for reading and writing rows. */
const generatorColumnNames = {
  chunkLength: "chunk_length",
  productId: "product_id",
  defaultMaxActivations: "default_max_activations",
  defaultValidDays: "default_valid_days",
  defaultOverageStrategy: "default_overage_strategy",
  defaultIsFloating: "default_is_floating",
  createdAt: "created_at",
  updatedAt: "updated_at"
} as const

/** A row of `lm_generators`. */
const GeneratorRow = Schema.Struct({
  id: Int8,
  name: Schema.String,
  charset: Schema.String,
  chunkLength: Schema.Int,
  prefix: Schema.String,
  productId: Schema.NullOr(Int8),
  defaultMaxActivations: Schema.NullOr(Schema.Int),
  defaultValidDays: Schema.NullOr(Schema.Int),
  defaultOverageStrategy: Schema.NullOr(Model.OverageStrategy),
  defaultIsFloating: Schema.NullOr(Schema.Boolean),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).pipe(Schema.encodeKeys(generatorColumnNames))

const generatorRows = rowsOf(GeneratorRow, "lm_generators")
const firstGenerator = firstOf(GeneratorRow, "lm_generators")
const oneGenerator = oneOf(GeneratorRow, "lm_generators")
const count = oneOf(Count, "a count")

/** A generator's columns but its id, as statement parameters. */
const generatorColumns = (g: Omit<Model.Generator, "id">) =>
  Struct.renameKeys({
    name: g.name,
    charset: g.charset,
    chunkLength: g.chunkLength,
    prefix: g.prefix,
    productId: g.productId,
    defaultMaxActivations: g.defaultMaxActivations,
    defaultValidDays: g.defaultValidDays,
    defaultOverageStrategy: g.defaultOverageStrategy,
    defaultIsFloating: g.defaultIsFloating,
    createdAt: date(g.createdAt),
    updatedAt: date(g.updatedAt)
  }, generatorColumnNames)

export const layer = Layer.effect(
  Ports.GeneratorRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return Ports.GeneratorRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_generators ${sql.insert(generatorColumns(draft))} RETURNING *`.pipe(
          Effect.flatMap(oneGenerator),
          orUnavailable
        ),
      findById: (id) => sql`SELECT * FROM lm_generators WHERE id = ${id}`.pipe(Effect.flatMap(firstGenerator), orUnavailable),
      list: (page) =>
        Effect.all({
          items: sql`SELECT * FROM lm_generators ORDER BY id ASC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`.pipe(
            Effect.flatMap(generatorRows)
          ),
          total: sql`SELECT count(*) AS n FROM lm_generators`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable),
      update: (g) =>
        sql`UPDATE lm_generators SET ${sql.update(generatorColumns(g))} WHERE id = ${g.id} RETURNING *`.pipe(
          Effect.flatMap(firstGenerator),
          Effect.map((updated) => updated ?? g),
          orUnavailable
        ),
      delete: (id) => sql`DELETE FROM lm_generators WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable)
    })
  })
)
