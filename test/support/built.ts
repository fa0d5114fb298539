/**
 * The built `lm` (`apps/server/dist/bin/lm.js`), which the tests spawn as a user runs it: plain Node, no
 * TypeScript loader, so each child server starts in less time than transforming the sources would take.
 * `npm test` builds first; a file run alone after an edit fails with a pointer to `npx tsc -b` instead of
 * testing the old build.
 */
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "..")

/** The packages `lm` is built from. */
const projects = ["packages/domain", "packages/storage-memory", "packages/storage-pg", "packages/api", "packages/http", "apps/server"]

/** The newest modification time of the files under `dir` whose names match `pattern` (0 when there is none). */
const newest = (dir: string, pattern: RegExp): number => {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && pattern.test(entry.name)) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
  }
  return latest
}

/** The projects whose sources changed after their last build. */
export const staleProjects = (): Array<string> =>
  projects.filter((project) => {
    const dir = join(root, project)
    const built = Math.max(newest(join(dir, "dist"), /\.js$/), statSync(join(dir, "tsconfig.tsbuildinfo"), { throwIfNoEntry: false })?.mtimeMs ?? 0)
    return newest(join(dir, "src"), /\.ts$/) > built
  })

let checked = false

/** The path of the built `lm`, once the build is known to be current (checked once per process). */
export const builtLm = (): string => {
  if (!checked) {
    const stale = staleProjects()
    if (stale.length > 0) throw new Error(`the build is older than the sources of ${stale.join(", ")}: run \`npx tsc -b\` (npm test builds first)`)
    checked = true
  }
  return join(root, "apps/server/dist/bin/lm.js")
}
