/**
 * Throw-away PGlite stores for tests. initdb takes seconds, so it runs once per machine and PGlite version:
 * the resulting data folder (the template, under the OS temp folder) is copied for each store, which opens
 * in a fraction of that time.
 */
import { PGlite } from "@electric-sql/pglite"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, type Layer } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import * as fs from "node:fs/promises"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { makePglite, StoreUnavailable } from "./PgStore.js"

const pgliteVersion = (): string => {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite")
  return JSON.parse(readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")).version
}

const exists = (file: string) => fs.access(file).then(() => true, () => false)

/** Builds the template next to its final place and renames it there, so readers never see half of one. */
const buildTemplate = async (): Promise<string> => {
  const dir = path.join(os.tmpdir(), `lm-pglite-template-${pgliteVersion()}`)
  if (await exists(path.join(dir, "PG_VERSION"))) return dir
  const building = `${dir}.${process.pid}.${Date.now()}`
  const db = await PGlite.create(building)
  await db.close()
  // Another process may have won the race; its template is as good as ours.
  await fs.rename(building, dir).catch(() => fs.rm(building, { recursive: true, force: true }))
  return dir
}

let template: Promise<string> | undefined

/** The template data folder (made on first use). Never open it directly: copy it. */
export const templateDataDir: Effect.Effect<string, StoreUnavailable> = Effect.tryPromise({
  try: () => {
    template ??= buildTemplate().catch((error) => {
      template = undefined
      throw error
    })
    return template
  },
  catch: (cause) => new StoreUnavailable({ message: `Could not make the PGlite template: ${String(cause)}` })
})

/** A fresh copy of the template in a new temporary folder, deleted when the scope closes. */
export const temporaryDataDir = Effect.acquireRelease(
  Effect.flatMap(templateDataDir, (source) =>
    Effect.tryPromise({
      try: async () => {
        const dir = await fs.mkdtemp(path.join(os.tmpdir(), "lm-pglite-"))
        await fs.cp(source, dir, { recursive: true })
        return dir
      },
      catch: (cause) => new StoreUnavailable({ message: `Could not copy the PGlite template: ${String(cause)}` })
    })),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }).catch(() => {}))
)

/**
 * `SqlClient` + `PgClient` on PGlite in a fresh copy of the template: an empty database (no migrations
 * applied) that is deleted on release.
 */
export const layerTemporary: Layer.Layer<PgClient.PgClient | SqlClient, StoreUnavailable> = PgClient.layerFrom(
  Effect.flatMap(temporaryDataDir, (dataDir) => makePglite({ dataDir }))
)
