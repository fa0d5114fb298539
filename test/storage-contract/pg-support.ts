/**
 * Throw-away databases for the storage contract: a fresh PGlite copy of the template, or a fresh database on
 * the PostgreSQL server of `DATABASE_URL`, created for one case and dropped after it.
 */
import { afterAll } from "vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer } from "effect"
import { layerOnClient, layerPostgres, layerPostgresStore, Migrations, PgliteBridge, PgliteSession, PgliteTemplate } from "@lm/storage-pg"
import { SqlClient } from "effect/sql/SqlClient"
import type { StorePorts } from "./support.js"

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

/**
 * What a freshly migrated database holds: every table's rows (most hold none; the migrations seed a few, such
 * as the revocation counter), every sequence's position, and a fingerprint of both to check a reset against.
 */
interface FreshState {
  readonly tables: ReadonlyArray<string>
  readonly seeds: ReadonlyArray<{ readonly table: string; readonly rows: string }>
  readonly sequences: ReadonlyArray<{ readonly name: string; readonly value: string; readonly called: boolean }>
  readonly fingerprint: string
}

const quoted = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

/** One row per table (its rows, as text, hashed) and per sequence (its position), ordered by name. */
const fingerprintOf = (tables: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql.unsafe<{ readonly name: string; readonly hash: string }>([
      ...tables.map((t) =>
        `SELECT '${t.replaceAll("'", "''")}'::text AS name, md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS hash FROM ${quoted(t)} x`
      ),
      `SELECT 'seq:' || schemaname || '.' || sequencename, coalesce(last_value::text, 'unset') FROM pg_sequences`
    ].join(" UNION ALL "))
    return rows.map((r) => `${r.name}=${r.hash}`).sort().join("\n")
  })

/** Reads the state of a freshly migrated database (before any case ran on it). */
const freshState = Effect.gen(function*() {
  const sql = yield* SqlClient
  const tables = (yield* sql<{ readonly name: string }>`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
    .map((r) => r.name)
  const seeds: Array<{ table: string; rows: string }> = []
  for (const table of tables) {
    const [row] = yield* sql.unsafe<{ readonly rows: string | null }>(`SELECT json_agg(x)::text AS rows FROM ${quoted(table)} x`)
    if (row?.rows != null) seeds.push({ table, rows: row.rows })
  }
  const sequences = (yield* sql<{ readonly name: string; readonly last: string | null; readonly start: string }>`
    SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) AS name, last_value::text AS last, start_value::text AS start
    FROM pg_sequences`)
    .map((s) => ({ name: s.name, value: s.last ?? s.start, called: s.last !== null }))
  return { tables, seeds, sequences, fingerprint: yield* fingerprintOf(tables) } satisfies FreshState
})

/**
 * Puts the database back to `fresh`: every table emptied, the seeded rows written again, every sequence where it
 * was. `DELETE`, not `TRUNCATE`: on PostgreSQL a `TRUNCATE` of the ~25 tables took 0.6-1.2 s (new files for every
 * table and index), deleting the few rows a case wrote takes milliseconds. Fails if the result differs from the fresh database in any row or sequence, so a
 * case never starts on what another left behind.
 */
const restore = (fresh: FreshState) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql.withTransaction(Effect.gen(function*() {
      // Neither foreign keys nor the change-notification triggers act meanwhile (superuser only, as the tests run).
      yield* sql.unsafe("SET LOCAL session_replication_role = replica")
      for (const table of fresh.tables) yield* sql.unsafe(`DELETE FROM ${quoted(table)}`)
      for (const seed of fresh.seeds) {
        yield* sql.unsafe(`INSERT INTO ${quoted(seed.table)} SELECT * FROM json_populate_recordset(null::${quoted(seed.table)}, $1::json)`, [seed.rows])
      }
      if (fresh.sequences.length > 0) {
        yield* sql.unsafe(`SELECT ${fresh.sequences.map((s) => `setval('${s.name}', ${s.value}, ${s.called})`).join(", ")}`)
      }
    }))
    const now = yield* fingerprintOf(fresh.tables)
    if (now !== fresh.fingerprint) {
      return yield* Effect.die(new Error(`the reset store differs from a fresh one:\n${now}\n---\n${fresh.fingerprint}`))
    }
  })

/**
 * Fresh, migrated PGlite clients, cheaply: one PGlite (loaded from the migrated template) per test file, put back
 * to its freshly migrated state each time the returned layer is built (see {@link restore}), instead of a new
 * PGlite per case (a worker thread, the WASM module and the template's load each time). Each build gets its own
 * connection (the session is reset when it takes it over). Closed after the file. Build one at a time.
 */
export const reusedPgliteClients = (): (() => Layer.Layer<PgClient.PgClient | SqlClient, unknown>) => {
  let opened: Promise<{ readonly bridge: PgliteBridge.PgliteBridge; readonly close: () => Promise<void>; readonly fresh: FreshState }> | undefined
  const client = (bridge: PgliteBridge.PgliteBridge) =>
    PgClient.make({ stream: bridge.connect, username: "postgres", database: "postgres", minConnections: 1, maxConnections: 1 })
  const open = async () => {
    const worker = await PgliteSession.inWorker({ loadDataDir: await Effect.runPromise(PgliteTemplate.migratedTarball) })
    const bridge = PgliteBridge.onSession(worker.session)
    const fresh = await Effect.runPromise(
      freshState.pipe(Effect.provide(PgClient.layerFrom(client(bridge))), Effect.scoped)
    )
    return { bridge, close: worker.close, fresh }
  }
  afterAll(async () => {
    if (opened === undefined) return
    const { bridge, close } = await opened
    await bridge.close()
    await close()
  })
  return () =>
    Layer.unwrap(Effect.gen(function*() {
      const { bridge, fresh } = yield* Effect.promise(() => (opened ??= open()))
      return PgClient.layerFrom(Effect.tap(client(bridge), (sql) => Effect.provideService(restore(fresh), SqlClient, sql)))
    }))
}

/** Fresh PGlite stores for the storage contract, cheaply: {@link reusedPgliteClients}, each with its own store layer. */
export const reusedPgliteStores = (): (() => Layer.Layer<StorePorts, unknown>) => {
  const clients = reusedPgliteClients()
  return () => layerOnClient.pipe(Layer.provide(clients()))
}

/**
 * Fresh PostgreSQL stores for the storage contract, cheaply: one database (a copy of the migrated template) per
 * test file, put back to its freshly migrated state before each case (see {@link restore}), instead of
 * `CREATE DATABASE` and `DROP DATABASE` per case. Each case still gets its own store (its own pool, change
 * feed and caches). Dropped after the file.
 */
export const reusedPostgresStores = (url: string, maxConnections = 10): (() => Layer.Layer<StorePorts, unknown>) => {
  let made: Promise<{ readonly dbUrl: string; readonly fresh: FreshState }> | undefined
  const name = `lm_contract_${process.pid}_${Date.now()}_${counter++}`
  const make = async () => {
    const template = await migratedTemplate(url)
    await Effect.runPromise(admin(url, `CREATE DATABASE ${name} TEMPLATE ${template}`))
    const dbUrl = databaseUrl(url, name)
    const fresh = await Effect.runPromise(freshState.pipe(Effect.provide(layerPostgres({ url: dbUrl, maxConnections: 1 })), Effect.scoped))
    return { dbUrl, fresh }
  }
  afterAll(async () => {
    if (made === undefined) return
    await made.catch(() => undefined)
    await Effect.runPromise(admin(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore))
  })
  return () =>
    Layer.unwrap(Effect.gen(function*() {
      const { dbUrl, fresh } = yield* Effect.promise(() => (made ??= make()))
      yield* restore(fresh).pipe(Effect.provide(layerPostgres({ url: dbUrl, maxConnections: 1 })), Effect.scoped)
      return layerPostgresStore({ url: dbUrl, maxConnections })
    }))
}
