/**
 * Throw-away databases for the storage contract: a fresh PGlite copy of the template, or a fresh database on
 * the PostgreSQL server of `DATABASE_URL`, created for one case and dropped after it.
 */
import { Effect, Layer } from "effect"
import { layerOnClient, layerPostgres, layerPostgresStore, Migrations, PgliteTemplate } from "@lm/storage-pg"
import { SqlClient } from "effect/sql/SqlClient"

/** A new, migrated PGlite store in a temporary copy of the template data folder. */
export const freshPgliteStore = () => layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporaryMigrated))

let counter = 0

/** The URL of another database on the same server as `url`. */
export const databaseUrl = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/** Runs one statement on the server's administrative connection (the database of `url` itself). */
export const admin = (url: string, statement: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql.unsafe(statement)
  }).pipe(Effect.provide(layerPostgres({ url, maxConnections: 1 })), Effect.scoped)

/**
 * A migrated database on the server of `url` to copy fresh ones from (`CREATE DATABASE … TEMPLATE`), so that a
 * fresh store skips the migrations. Named by the hash of the migration files; made once (built under a name of
 * its own, migrated, then renamed) and kept on the server for later runs, like PGlite's template in the OS temp
 * folder. Nobody connects to it but the migration that makes it.
 */
const migratedTemplate = (url: string): Promise<string> => {
  let made = templates.get(url)
  if (made === undefined) {
    made = Effect.runPromise(makeMigratedTemplate(url))
    templates.set(url, made)
    made.catch(() => templates.delete(url))
  }
  return made
}

const templates = new Map<string, Promise<string>>()

const makeMigratedTemplate = (url: string) =>
  Effect.gen(function*() {
    const name = `lm_template_${yield* Effect.promise(PgliteTemplate.migrationsHash)}`
    const sql = yield* SqlClient
    const found = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`
    if (found[0]!.n > 0) return name
    const building = `${name}_${process.pid}_${Date.now()}`
    yield* sql.unsafe(`CREATE DATABASE ${building}`)
    yield* Migrations.migrate.pipe(Effect.provide(layerPostgres({ url: databaseUrl(url, building), maxConnections: 1 })), Effect.scoped)
    yield* sql.unsafe(`COMMENT ON DATABASE ${building} IS 'the test suite copies its fresh databases from this one; safe to drop'`)
    // Another process may have made it meanwhile: theirs is as good as ours.
    yield* sql.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`).pipe(
      Effect.catch(() => sql.unsafe(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`))
    )
    return name
  }).pipe(Effect.provide(layerPostgres({ url, maxConnections: 1 })), Effect.scoped)

/** A new, migrated database on the PostgreSQL server of `url` (a copy of its migrated template), dropped when the layer is released. */
export const freshPostgresStore = (url: string, maxConnections = 10) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const template = yield* Effect.promise(() => migratedTemplate(url))
      const name = `lm_contract_${process.pid}_${Date.now()}_${counter++}`
      yield* Effect.acquireRelease(
        admin(url, `CREATE DATABASE ${name} TEMPLATE ${template}`),
        () => admin(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
      )
      return layerPostgresStore({ url: databaseUrl(url, name), maxConnections })
    })
  )

/** A fresh, empty database on the server of `url` (dropped with the scope); returns its URL. */
export const freshDatabase = (url: string, name: string) =>
  Effect.acquireRelease(
    admin(url, `CREATE DATABASE ${name}`),
    () => admin(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  ).pipe(Effect.as(databaseUrl(url, name)))
