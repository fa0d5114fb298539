/**
 * Bundles `lm` (the built `dist/`, after `tsc -b`) into `dist/bundle/`: a few ES modules instead of the ~720 that
 * `lm` loads from the workspace packages and `effect` (over a thousand for `lm serve`). Node's module loader
 * (resolving, `stat`, `package.json` reads, linking) was about half of every command's start; bundled, `lm` loads
 * its own code from a handful of files. `bin/lm.ts` runs the bundle only while it is current (`bin/bundled.ts`):
 * after a later `tsc -b` it runs `dist/` as before.
 *
 * Entry points besides the command line: the metrics listener's thread and PGlite's worker thread, each started
 * from a file next to the code that starts it (`new URL("./MetricsThread.js", import.meta.url)`, PGlite's session
 * its own module), so they must exist as files in the bundle's folder; PGlite's session is an entry of its own so
 * that its chunk holds nothing else (the worker runs that chunk). `dist/bundle/` is as deep as `dist/settings/`, so
 * the console's folder, found relative to the module, is the same.
 *
 * Left out of the bundle: packages loaded only when a setting asks for them or that read files of their own
 * (PGlite's WASM, the S3 client, Redis, the billing providers' SDKs, undici); they load from `node_modules`.
 *
 * Run: `npm run build` (root: `tsc -b`, the console, then this), or `node apps/server/bundle.ts` (nothing to do
 * while the bundle is current; `--force` bundles anyway).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { build } from "esbuild"
import { type BuildStamp, currentBundle, installedDependencies, stampFile, stampOf, writeStamp } from "./src/bin/bundled.ts"

const serverDir = fileURLToPath(new URL(".", import.meta.url))
const repoRoot = path.resolve(serverDir, "../..")
const rootUrl = pathToFileURL(`${repoRoot}/`)
const outdir = path.join(serverDir, "dist/bundle")

/** Packages `lm` imports only when needed, or that load files relative to themselves: not bundled. */
const external = [
  "@electric-sql/pglite",
  "@aws-sdk/*",
  "@smithy/*",
  "redis",
  "@redis/*",
  "stripe",
  "@paddle/*",
  "undici",
  // optional native speed-ups `ws` tries to load
  "bufferutil",
  "utf-8-validate"
]

/**
 * Bundles `lm` into `dist/bundle/`; returns the stamp written with it. Files of earlier bundles are left in place:
 * chunks are named by their content, and a server still running an earlier bundle loads some of them later (the
 * server's start, the S3 client, the API's documentation pages).
 */
export const bundleLm = async (): Promise<BuildStamp> => {
  const dist = path.join(serverDir, "dist")
  if (!fs.existsSync(path.join(dist, "bin/run.js"))) throw new Error("apps/server/dist/bin/run.js is missing: run `npx tsc -b` first")
  const result = await build({
    absWorkingDir: repoRoot,
    entryPoints: {
      run: path.join(dist, "bin/run.js"),
      MetricsThread: path.join(dist, "MetricsThread.js"),
      PgliteSession: path.join(repoRoot, "packages/storage-pg/dist/PgliteSession.js")
    },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    external,
    // CommonJS dependencies bundled into an ES module still call `require` for Node's own modules.
    banner: { js: "import { createRequire as __lmRequire } from \"node:module\"; const require = __lmRequire(import.meta.url);" },
    metafile: true,
    logLevel: "warning"
  })
  // The bundle is current while every workspace package it took files from is as `tsc -b` left it when bundled,
  // the installed dependencies are the same (npm rewrites its lock in node_modules on every install) and so is
  // this script.
  const workspaces = new Set<string>()
  for (const input of Object.keys(result.metafile.inputs)) {
    const real = fs.realpathSync(path.resolve(repoRoot, input))
    const match = /^(packages|apps)\/[^/]+/.exec(path.relative(repoRoot, real))
    if (match !== null) workspaces.add(`${match[0]}/tsconfig.tsbuildinfo`)
  }
  const stamp = stampOf([...[...workspaces].sort(), installedDependencies, "apps/server/bundle.ts"], rootUrl)
  writeStamp(pathToFileURL(path.join(outdir, stampFile)), stamp)
  return stamp
}

/** Whether the bundle in `dist/bundle/` is current (then `npm start` need not bundle again). */
export const bundleIsCurrent = (): boolean =>
  currentBundle(pathToFileURL(`${outdir}/`), rootUrl) !== undefined

if (import.meta.main) {
  const started = performance.now()
  if (!process.argv.includes("--force") && bundleIsCurrent()) {
    console.log(`lm bundle: ${path.relative(process.cwd(), outdir)} is current`)
    process.exit(0)
  }
  const stamp = await bundleLm()
  console.log(
    `lm bundle: ${path.relative(process.cwd(), outdir)}, stamped with the ${Object.keys(stamp.builtFrom).length} files it was made from, in ${
      Math.round(performance.now() - started)
    } ms`
  )
}
