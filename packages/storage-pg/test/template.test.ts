/**
 * The migrated PGlite template (`PgliteTemplate.layerTemporaryMigrated`): a throw-away store with every migration
 * already applied, so a test store starts without running them; and each one a store of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Migrations, PgliteTemplate } from "@lm/storage-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

describe("the migrated PGlite template", () => {
  it.effect("records every migration, so migrating it applies none", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = yield* sql`SELECT migration_id FROM ${sql(Migrations.migrationsTable)} ORDER BY migration_id`
      assert.deepStrictEqual(rows.map((row) => Number(row.migration_id)), Object.keys(Migrations.migrations).map((key) => Number(key.slice(0, 4))))
      assert.deepStrictEqual(yield* Migrations.migrate, [])
    }).pipe(Effect.provide(PgliteTemplate.layerTemporaryMigrated)), { timeout: 120_000 })

  it.effect("gives each store its own database: a write to one is not in the next", () =>
    Effect.gen(function*() {
      const write = Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`CREATE TABLE template_probe (id int)`
      }).pipe(Effect.provide(PgliteTemplate.layerTemporaryMigrated))
      yield* write
      // Would fail with "already exists" if the second store saw the first one's table.
      yield* write
    }), { timeout: 120_000 })
})
