/** The domain's `GeneratorRepository` on `lm_generators`. */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { Count, firstOf, oneOf, rowsOf, tableOf } from "./rows.js"

/** A row of `lm_generators`. */
const generators = tableOf(Model.Generator, { generated: ["id"] })
const GeneratorRow = generators.Row

const generatorRows = rowsOf(GeneratorRow, "lm_generators")
const firstGenerator = firstOf(GeneratorRow, "lm_generators")
const oneGenerator = oneOf(GeneratorRow, "lm_generators")
const count = oneOf(Count, "a count")

/** A generator's columns but its id, as statement parameters. */
const generatorColumns = generators.columns

export const layer = Layer.effect(
  Ports.GeneratorRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
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
