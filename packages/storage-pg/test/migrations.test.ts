/**
 * Shipped migrations are frozen: a database migrated by an earlier release never runs them again, so an edit
 * would give new databases a schema the old ones do not have. This test runs every migration on a fresh PGlite
 * database, records the SQL text each one sends, and compares its SHA-256 with the digest committed below. It
 * also checks that a migration file imports nothing but effect / @effect/sql (no live code of this repository,
 * which may change after the migration shipped).
 */
import { assert, describe, it } from "@effect/vitest"
import { Migrations, PgliteTemplate } from "@lm/storage-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Statement from "effect/sql/Statement"
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * SHA-256 of the JSON array of SQL texts each shipped migration sends, in order. Never change a digest here:
 * a shipped migration must not change. Add a new migration instead (and its digest).
 */
const shipped: Record<string, string> = {
  "0001_lm_meta": "33e24aaa494559a2d84de41ffa8db0dc496e26ea79c3e2c06bdccd814f04a2bf",
  "0002_licensing_schema": "afc8598afda13488e9ad679b70b1873d7aa35cf6e41d582e2a340bcc5edab5a0",
  "0003_change_notifications": "b9ce4b5742ea270cd976ed2755849cb060851c5c82874d68f287aecf1f304c16",
  "0004_activity_time_brin": "f05c68aee0ac95b8cd0b26750f09e7ec4220b698d15a57e45d32b8dede415a39",
  "0005_webhooks": "7182661c379645b30cfcfaa5aa4d6ba8128defcdb0fba3634f73a18286e2badd",
  "0006_subscriptions": "19676510e804f6805d3ca277dacff37b83fde4cf85b6ef63233622cc1df8ca9b",
  "0007_rate_limits": "3316056f929aa881a7fcd41e26622c6dbc42fe2dc182d032ec7e3d689086f7d5",
  "0008_analytics": "709c13ed8a430dc8a67c8a032cb3d85090b1bb99193f675a422d8a3c4e153655",
  "0009_releases": "a0dd4e7e70053c73674f0571291378f83f03bd399a23208abd92e4be7767e44c",
  "0010_license_suspended_by": "b35538b4ad9cf116f68ef086d0f228a1dec704bb120954ec4fbfdd33493e92a4",
  "0011_analytics_covering": "c07c390ab204156aff048ab27b7ae717505bd0bba3fead96e63171248693634a",
  "0012_top_license_totals": "be39ee0008d175541e4c6765d484ecbb464c09973e1aacc03fda9cf27354a45c",
  "0013_deleted_api_keys": "9ccdf400e474766ed67e7440ac1d1eba167c2178b1bf1f8bda1908b2e79183a2",
  "0014_policies": "b1ddb5001d4854c0448877b42c75d6ea875e835c56ef75486e579fa0dae9ec5f",
  "0015_audit_log": "bf830ab4e6efa6100a37bace56b5b12854dda0f38f3a5b71149b9dd4bdc0c2ee",
  "0016_billing": "a0b64b854c710ec27502fc56d965d190e8106d61a552333c15182a3ef27e4916",
  "0017_idempotency": "f53c5f88d10dde15c967bd8019be04c1004e7742ebab7250100bccb89e56ff2f"
}

const migrationsDir = fileURLToPath(new URL("../src/migrations/", import.meta.url))

/** The migration files, `<id>_<name>.ts`. */
const migrationFiles = readdirSync(migrationsDir).filter((file) => file.endsWith(".ts")).sort()

/** Every module specifier a file imports or re-exports (static and dynamic). */
const importsOf = (file: string): Array<string> =>
  [...readFileSync(file, "utf8").matchAll(/(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g)]
    .map((match) => match[1] ?? match[2] ?? match[3]!)

/** What a migration may import: effect and its SQL packages, which keep their APIs within a major version. */
const allowedImport = (specifier: string) =>
  specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("@effect/sql")

/** The SQL texts a migration sends, in order (run on the given database, after the ones before it). */
const statementsOf = (migration: Effect.Effect<void, unknown, SqlClient>) =>
  Effect.gen(function*() {
    const sent: Array<string> = []
    yield* migration.pipe(
      Effect.provideService(Statement.CurrentTransformer, (statement) =>
        Effect.sync(() => {
          sent.push(statement.compile()[0])
          return statement
        }))
    )
    return sent
  })

const digest = (statements: ReadonlyArray<string>) => createHash("sha256").update(JSON.stringify(statements)).digest("hex")

describe("migrations", () => {
  it("are the files of src/migrations, each registered once under its file name", () => {
    assert.isTrue(migrationFiles.every((file) => /^\d{4}_[a-z0-9_]+\.ts$/.test(file)), migrationFiles.join(", "))
    assert.deepStrictEqual(Object.keys(Migrations.migrations), migrationFiles.map((file) => file.replace(/\.ts$/, "")))
  })

  it("import nothing but effect / @effect/sql (no live code of this repository)", () => {
    assert.isTrue(importsOf(path.join(migrationsDir, migrationFiles[0]!)).includes("effect"), "the import scanner works")
    const offending = migrationFiles.flatMap((file) =>
      importsOf(path.join(migrationsDir, file)).filter((s) => !allowedImport(s)).map((s) => `${file} imports ${s}`)
    )
    assert.deepStrictEqual(
      offending,
      [],
      "A migration must not import code of this repository (or anything but effect): it would change when that code does."
    )
  })

  it.effect("record the ids and names databases migrated before the files existed already hold", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const recorded: Array<[number, string]> = [
        [1, "lm_meta"],
        [2, "licensing_schema"],
        [3, "change_notifications"],
        [4, "activity_time_brin"],
        [5, "webhooks"],
        [6, "subscriptions"],
        [7, "rate_limits"],
        [8, "analytics"],
        [9, "releases"],
        [10, "license_suspended_by"],
        [11, "analytics_covering"],
        [12, "top_license_totals"],
        [13, "deleted_api_keys"],
        [14, "policies"],
        [15, "audit_log"],
        [16, "billing"],
        [17, "idempotency"]
      ]
      assert.deepStrictEqual(yield* Migrations.migrate, recorded)
      const rows = yield* sql`SELECT migration_id, name FROM ${sql(Migrations.migrationsTable)} ORDER BY migration_id`
      assert.deepStrictEqual(rows.map((row) => [row.migration_id, row.name]), recorded)
    }).pipe(Effect.provide(PgliteTemplate.layerTemporary)), { timeout: 120_000 })

  it.effect("the SQL of every shipped migration is unchanged", () =>
    Effect.gen(function*() {
      const found: Record<string, string> = {}
      for (const [key, migration] of Object.entries(Migrations.migrations)) {
        found[key] = digest(yield* statementsOf(migration))
      }
      for (const [key, expected] of Object.entries(shipped)) {
        assert.strictEqual(
          found[key],
          expected,
          `The SQL of migration ${key} changed. A shipped migration must never change (databases that already ran ` +
            `it would not get the change): revert it and add a new migration (and its digest here) instead.`
        )
      }
      assert.deepStrictEqual(
        Object.entries(found).filter(([key]) => !(key in shipped)),
        [],
        "A new migration: once it is final, add its name and digest (the actual value shown) to `shipped` in this test."
      )
    }).pipe(Effect.provide(PgliteTemplate.layerTemporary)), { timeout: 120_000 })
})
