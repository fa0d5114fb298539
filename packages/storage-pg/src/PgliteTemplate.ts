/**
 * Throw-away PGlite stores for tests. initdb takes seconds, so it runs once per machine and PGlite version:
 * the resulting data folder (the template, under the OS temp folder, with a tarball of it) is loaded into
 * memory, or copied when a test needs a real folder, which takes a fraction of that time. Migrating a new
 * store takes seconds too, so a second tarball holds the template with every migration applied, made once per
 * PGlite version and set of migration files.
 */
import { PGlite } from "@electric-sql/pglite"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, Schema } from "effect"
import { createHash } from "node:crypto"
import type { SqlClient } from "effect/sql/SqlClient"
import * as fs from "node:fs/promises"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as Migrations from "./Migrations.js"
import * as PgliteBridge from "./PgliteBridge.js"
import { makePglite, StoreUnavailable } from "./PgStore.js"

const PackageJson = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ version: Schema.String })))

/** The installed PGlite's version (a template is made per version). */
const pgliteVersion = (): string => {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite")
  return PackageJson(readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")).version
}

const exists = (file: string) => fs.access(file).then(() => true, () => false)

interface Template {
  /** The data folder. */
  readonly dir: string
  /** The same, as a tarball for `loadDataDir`. */
  readonly tar: string
}

/** Builds the template next to its final place and renames it there, so readers never see half of one. */
const buildTemplate = async (): Promise<Template> => {
  const base = path.join(os.tmpdir(), `lm-pglite-template-${pgliteVersion()}`)
  const template = { dir: base, tar: `${base}.tar` }
  if ((await exists(path.join(template.dir, "PG_VERSION"))) && (await exists(template.tar))) return template
  const building = `${base}.${process.pid}.${Date.now()}`
  const db = await PGlite.create(building)
  const dump = await db.dumpDataDir("none")
  await db.close()
  await fs.writeFile(`${building}.tar`, Buffer.from(await dump.arrayBuffer()))
  await fs.rename(`${building}.tar`, template.tar)
  // Another process may have won the race; its template is as good as ours.
  await fs.rename(building, template.dir).catch(() => fs.rm(building, { recursive: true, force: true }))
  return template
}

/** Memoises an async result for the process; a failure is forgotten, so the next call tries again. */
const memo = <A>(make: () => Promise<A>): (() => Promise<A>) => {
  let value: Promise<A> | undefined
  return () =>
    (value ??= make().catch((error) => {
      value = undefined
      throw error
    }))
}

const loadTemplate = memo(buildTemplate)
const loadTarball = memo(async () => new Blob([await fs.readFile((await loadTemplate()).tar)]))

/** The template data folder (made on first use). Never open it directly: copy it. */
export const templateDataDir: Effect.Effect<string, StoreUnavailable> = Effect.tryPromise({
  try: () => loadTemplate().then((template) => template.dir),
  catch: (cause) => new StoreUnavailable({ message: `Could not make the PGlite template: ${String(cause)}` })
})

/** The template's tarball file (made on first use), for another process to load. Never write to it. */
export const templateTarballFile: Effect.Effect<string, StoreUnavailable> = Effect.tryPromise({
  try: () => loadTemplate().then((template) => template.tar),
  catch: (cause) => new StoreUnavailable({ message: `Could not make the PGlite template: ${String(cause)}` })
})

/** The template as a tarball for `loadDataDir`, read once per process. */
export const templateTarball: Effect.Effect<Blob, StoreUnavailable> = Effect.tryPromise({
  try: loadTarball,
  catch: (cause) => new StoreUnavailable({ message: `Could not read the PGlite template: ${String(cause)}` })
})

/** A fresh copy of the template in a new temporary folder, deleted when the scope closes. */
export const temporaryDataDir = Effect.acquireRelease(
  Effect.flatMap(templateDataDir, (source) =>
    Effect.tryPromise({
      try: async () => {
        const dir = await fs.mkdtemp(path.join(os.tmpdir(), "lm-pglite-"))
        await fs.cp(source, dir, { recursive: true }).catch(async (error) => {
          await fs.rm(dir, { recursive: true, force: true })
          throw error
        })
        return dir
      },
      catch: (cause) => new StoreUnavailable({ message: `Could not copy the PGlite template: ${String(cause)}` })
    })),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }).catch(() => {}))
)

/**
 * `SqlClient` + `PgClient` on an empty PGlite database (no migrations applied) in memory, loaded from the
 * template tarball: faster than copying the template folder (see the README) and nothing to delete.
 */
export const layerTemporary: Layer.Layer<PgClient.PgClient | SqlClient, StoreUnavailable> = PgClient.layerFrom(
  Effect.flatMap(templateTarball, (loadDataDir) => makePglite({ loadDataDir }))
)

/** The migration files (names and contents), hashed: a new or changed migration makes a new migrated template. */
export const migrationsHash = async (): Promise<string> => {
  const dir = new URL("./migrations/", import.meta.url)
  const hash = createHash("sha256")
  for (const name of (await fs.readdir(dir)).filter((file) => /^\d{4}_.*\.[jt]s$/.test(file)).sort()) {
    hash.update(name).update("\0").update(await fs.readFile(new URL(name, dir))).update("\0")
  }
  return hash.digest("hex").slice(0, 16)
}

/** Applies the migrations to the template in memory and writes the result as a tarball (renamed into place). */
const buildMigratedTarball = async (): Promise<Blob> => {
  const tar = path.join(os.tmpdir(), `lm-pglite-migrated-${pgliteVersion()}-${await migrationsHash()}.tar`)
  if (await exists(tar)) return new Blob([await fs.readFile(tar)])
  const db = await PGlite.create({ loadDataDir: await loadTarball() })
  try {
    const client = PgClient.layerFrom(PgClient.make({
      stream: PgliteBridge.make(db).connect,
      username: "postgres",
      database: "postgres",
      minConnections: 1,
      maxConnections: 1
    }))
    await Effect.runPromise(Migrations.migrate.pipe(Effect.provide(client), Effect.scoped))
    const dump = await db.dumpDataDir("none")
    const building = `${tar}.${process.pid}.${Date.now()}`
    await fs.writeFile(building, Buffer.from(await dump.arrayBuffer()))
    // Another process may have written the same one meanwhile; either is as good.
    await fs.rename(building, tar)
    return dump
  } finally {
    await db.close()
  }
}

const loadMigratedTarball = memo(buildMigratedTarball)

/** The migrated template as a tarball for `loadDataDir` (made on first use), read once per process. */
export const migratedTarball: Effect.Effect<Blob, StoreUnavailable> = Effect.tryPromise({
  try: loadMigratedTarball,
  catch: (cause) => new StoreUnavailable({ message: `Could not make the migrated PGlite template: ${String(cause)}` })
})

/**
 * Like {@link layerTemporary}, with every migration already applied (loaded from the migrated template), so the
 * store's own migration run finds nothing to do: what a test of the store, not of its migrations, wants.
 */
export const layerTemporaryMigrated: Layer.Layer<PgClient.PgClient | SqlClient, StoreUnavailable> = PgClient.layerFrom(
  Effect.flatMap(migratedTarball, (loadDataDir) => makePglite({ loadDataDir }))
)

/** Unpacks the migrated template into a data folder next to its tarball (renamed into place), once per process. */
const buildMigratedDir = async (): Promise<string> => {
  const dir = path.join(os.tmpdir(), `lm-pglite-migrated-${pgliteVersion()}-${await migrationsHash()}`)
  if (await exists(path.join(dir, "PG_VERSION"))) return dir
  const building = `${dir}.${process.pid}.${Date.now()}`
  const db = await PGlite.create(building, { loadDataDir: await loadMigratedTarball() })
  await db.close()
  // Another process may have won the race; its folder is as good as ours.
  await fs.rename(building, dir).catch(() => fs.rm(building, { recursive: true, force: true }))
  return dir
}

const loadMigratedDir = memo(buildMigratedDir)

/**
 * The migrated template as a data folder (made on first use), for a test that starts `lm serve` on PGlite: copied
 * into its `LM_DATA_DIR`, the server's start finds every migration applied. Never open it directly: copy it.
 */
export const migratedDataDir: Effect.Effect<string, StoreUnavailable> = Effect.tryPromise({
  try: loadMigratedDir,
  catch: (cause) => new StoreUnavailable({ message: `Could not make the migrated PGlite folder: ${String(cause)}` })
})
