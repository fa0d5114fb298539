/**
 * Throw-away databases for the storage contract: a fresh PGlite copy of the template, or a fresh database on
 * the PostgreSQL server of `DATABASE_URL`, created for one case and dropped after it.
 */
import { Effect, Layer } from "effect"
import { layerOnClient, layerPostgres, layerPostgresStore, PgliteTemplate } from "@lm/storage-pg"
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

/** A new, migrated database on the PostgreSQL server of `url`, dropped when the layer is released. */
export const freshPostgresStore = (url: string, maxConnections = 10) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const name = `lm_contract_${process.pid}_${Date.now()}_${counter++}`
      yield* Effect.acquireRelease(
        admin(url, `CREATE DATABASE ${name}`),
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
