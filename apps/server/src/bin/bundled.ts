/**
 * Whether `lm` can run from its bundle (`dist/bundle/`, written by `apps/server/bundle.ts`): only while every
 * file it was bundled from is as it was then: each workspace package's `tsconfig.tsbuildinfo` (`tsc -b` rewrites
 * it when it builds the package), npm's lock in `node_modules` and the bundling script, by modification time,
 * recorded in the bundle's stamp. After a later build, install or change, or with no bundle, `lm` runs `dist/`
 * module by module: slower to start, never an older build. Node only, no dependency: `lm.ts`
 * calls this before anything else is loaded.
 */
import { readFileSync, statSync } from "node:fs"

/** The stamp's file name in the bundle's folder. */
export const stampFile = "stamp.json"

/** What the bundle was built from: each file (path from the repository root) and its modification time. */
export interface BundleStamp {
  readonly builtFrom: Record<string, number>
}

/**
 * The bundle's command-line entry, when the bundle in `bundleDir` is current for the repository at `root`
 * (both URLs of folders); undefined otherwise.
 */
export const currentBundle = (bundleDir: URL, root: URL): URL | undefined => {
  let stamp: BundleStamp
  try {
    stamp = JSON.parse(readFileSync(new URL(stampFile, bundleDir), "utf8"))
  } catch {
    return undefined
  }
  const builtFrom = Object.entries(stamp?.builtFrom ?? {})
  if (builtFrom.length === 0) return undefined
  for (const [file, mtimeMs] of builtFrom) {
    if (statSync(new URL(file, root), { throwIfNoEntry: false })?.mtimeMs !== mtimeMs) return undefined
  }
  return new URL("run.js", bundleDir)
}
