/**
 * Whether `lm` can run from its bundle (`dist/bundle/`, written by `apps/server/bundle.ts`): only while every
 * file it was bundled from is as it was then: each workspace package's `tsconfig.tsbuildinfo` (`tsc -b` rewrites
 * it when it builds the package), npm's lock in `node_modules` and the bundling script, by modification time,
 * recorded in the bundle's stamp. After a later build, install or change, or with no bundle, `lm` runs `dist/`
 * module by module: slower to start, never an older build. The console's build (`apps/console/build.ts`) stamps
 * its output the same way, to skip a build that would write the same files. Node only, no dependency: `lm.ts`
 * calls this before anything else is loaded.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs"

/** The stamp's file name in the bundle's folder. */
export const stampFile = "stamp.json"

/** What an output was built from: each file (path from the repository root) and its modification time. */
export interface BuildStamp {
  readonly builtFrom: Record<string, number>
}

/** The stamp of `files` (paths from `root`, a folder URL) as they are now; files that do not exist are left out. */
export const stampOf = (files: Iterable<string>, root: URL): BuildStamp => {
  const builtFrom: Record<string, number> = {}
  for (const file of files) {
    const stat = statSync(new URL(file, root), { throwIfNoEntry: false })
    if (stat !== undefined) builtFrom[file] = stat.mtimeMs
  }
  return { builtFrom }
}

/** The installed dependencies, as a build stamp records them: npm rewrites its lock in `node_modules` on every install. */
export const installedDependencies = "node_modules/.package-lock.json"

/** Writes a stamp file. */
export const writeStamp = (file: URL, stamp: BuildStamp): void => writeFileSync(file, `${JSON.stringify(stamp, null, 2)}\n`)

/** Whether the stamp in `file` holds for the repository at `root`: it records files, each as it is now. */
export const stampHolds = (file: URL, root: URL): boolean => {
  let stamp: BuildStamp
  try {
    stamp = JSON.parse(readFileSync(file, "utf8"))
  } catch {
    return false
  }
  const builtFrom = Object.entries(stamp?.builtFrom ?? {})
  return builtFrom.length > 0 && builtFrom.every(([name, mtimeMs]) => statSync(new URL(name, root), { throwIfNoEntry: false })?.mtimeMs === mtimeMs)
}

/**
 * The bundle's command-line entry, when the bundle in `bundleDir` is current for the repository at `root`
 * (both URLs of folders); undefined otherwise.
 */
export const currentBundle = (bundleDir: URL, root: URL): URL | undefined =>
  stampHolds(new URL(stampFile, bundleDir), root) ? new URL("run.js", bundleDir) : undefined
