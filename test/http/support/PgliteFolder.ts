/**
 * A data folder for `lm serve` on PGlite that starts migrated: a copy of the migrated PGlite template
 * (`PgliteTemplate.migratedDataDir`), so the child skips initdb and every migration (seconds per start).
 */
import { cpSync } from "node:fs"
import { Effect } from "effect"
import { PgliteTemplate } from "@lm/storage-pg"

/** Fills `dir` (made if missing) with a copy of the migrated template; resolves with `dir`. */
export const migratedPgliteFolder = async (dir: string): Promise<string> => {
  cpSync(await Effect.runPromise(PgliteTemplate.migratedDataDir), dir, { recursive: true })
  return dir
}
