/**
 * Builds the console into static files: `dist/index.html` and `dist/assets/main-<hash>.js` / `.css` (names that
 * change with their content, so `lm serve` lets browsers cache them for a year). One esbuild run from the
 * TypeScript sources (the workspace packages it imports are read from their `src/`, so the build never takes a
 * stale `dist/` of theirs), minified, for browsers of 2022 on. Prints the JavaScript's size, raw and gzipped.
 *
 * Run: `npm run build` (root: `tsc -b`, then this), or `node apps/console/build.ts [outdir]`. Into the default
 * folder it builds only when a file it was built from changed (`--force` builds anyway).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { gzipSync } from "node:zlib"
import { build, type Plugin } from "esbuild"
import { installedDependencies, stampHolds, stampOf, writeStamp } from "../server/src/bin/bundled.ts"

const consoleDir = fileURLToPath(new URL(".", import.meta.url))
const repoRoot = path.resolve(consoleDir, "../..")

/** The built console's JavaScript must stay under this many bytes gzipped (issue 31). */
export const maxGzipBytes = 300 * 1024

/** What a build wrote, and the JavaScript's weight. */
export interface ConsoleBuild {
  readonly outdir: string
  /** The files under `outdir`, relative to it. */
  readonly files: ReadonlyArray<string>
  readonly jsBytes: number
  readonly jsGzipBytes: number
  /** The files it was built from, as paths from the repository's root. */
  readonly inputs: ReadonlyArray<string>
}

/**
 * `@lm/<name>[/<entry>]` to the TypeScript source of that entry, through the workspace package's `exports`
 * (`./dist/x/index.js` is `./src/x/index.ts`), for every workspace package of the repository.
 */
const workspaceSources = (): Plugin => {
  const rootManifest = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { workspaces: Array<string> }
  const packages = new Map<string, { dir: string; exports: Record<string, { default: string }> }>()
  for (const workspace of rootManifest.workspaces) {
    const dir = path.join(repoRoot, workspace)
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
    packages.set(manifest.name, { dir, exports: manifest.exports ?? {} })
  }
  return {
    name: "workspace-sources",
    setup(b) {
      b.onResolve({ filter: /^@lm\// }, (args) => {
        const [scope, name, ...rest] = args.path.split("/")
        const pkg = packages.get(`${scope}/${name}`)
        const entry = pkg?.exports[rest.length === 0 ? "." : `./${rest.join("/")}`]?.default
        if (pkg === undefined || entry === undefined) return { errors: [{ text: `${args.path} is not an entry of a workspace package` }] }
        return { path: path.join(pkg.dir, entry.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")) }
      })
    }
  }
}

/** The page: no inline script or style; the server fills in `lm-rest-root`. */
const indexHtml = (script: string, style: string | undefined) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="lm-rest-root" content="/api">
<title>Licensing console</title>
<link rel="icon" href="data:,">
${style === undefined ? "" : `<link rel="stylesheet" href="/console/assets/${style}">\n`}<script type="module" src="/console/assets/${script}"></script>
</head>
<body>
<noscript>The licensing console needs JavaScript.</noscript>
<div id="app"></div>
</body>
</html>
`

/** Builds the console into `outdir` (default `apps/console/dist`), replacing what was there. */
export const buildConsole = async (outdir = path.join(consoleDir, "dist")): Promise<ConsoleBuild> => {
  fs.rmSync(outdir, { recursive: true, force: true })
  const assets = path.join(outdir, "assets")
  const result = await build({
    absWorkingDir: consoleDir,
    entryPoints: { main: path.join(consoleDir, "src/main.tsx") },
    outdir: assets,
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    sourcemap: "linked",
    sourcesContent: false,
    legalComments: "linked",
    jsx: "automatic",
    jsxImportSource: "preact",
    define: { "process.env.NODE_ENV": '"production"' },
    metafile: true,
    logLevel: "warning",
    plugins: [workspaceSources()]
  })
  const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file))
  const script = outputs.find((name) => name.startsWith("main-") && name.endsWith(".js"))
  const style = outputs.find((name) => name.startsWith("main-") && name.endsWith(".css"))
  if (script === undefined) throw new Error("esbuild wrote no main-<hash>.js")
  fs.writeFileSync(path.join(outdir, "index.html"), indexHtml(script, style))
  const js = outputs.filter((name) => name.endsWith(".js")).map((name) => fs.readFileSync(path.join(assets, name)))
  return {
    outdir,
    inputs: Object.keys(result.metafile.inputs).map((input) => path.relative(repoRoot, fs.realpathSync(path.resolve(consoleDir, input)))),
    files: ["index.html", ...outputs.map((name) => `assets/${name}`)],
    jsBytes: js.reduce((sum, bytes) => sum + bytes.length, 0),
    jsGzipBytes: js.reduce((sum, bytes) => sum + gzipSync(bytes, { level: 9 }).length, 0)
  }
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

/**
 * The stamp of the default build (see `apps/server/src/bin/bundled.ts`): the files it was built from and wrote, so
 * that `npm start` skips a build that would write the same files (about a second and a half).
 */
const defaultStamp = pathToFileURL(path.join(consoleDir, "dist.stamp.json"))
const rootUrl = pathToFileURL(`${repoRoot}/`)

if (import.meta.main) {
  const outdir = process.argv.slice(2).find((arg) => !arg.startsWith("--"))
  if (outdir === undefined && !process.argv.includes("--force") && stampHolds(defaultStamp, rootUrl)) {
    console.log("console: apps/console/dist is current")
    process.exit(0)
  }
  const built = await buildConsole(outdir === undefined ? undefined : path.resolve(outdir))
  // Stamped only when within the size limit, so that an oversized build fails again at the next run.
  if (outdir === undefined && built.jsGzipBytes <= maxGzipBytes) {
    const written = built.files.map((file) => path.relative(repoRoot, path.join(built.outdir, file)))
    writeStamp(defaultStamp, stampOf([...built.inputs, ...written, "apps/console/build.ts", installedDependencies], rootUrl))
  }
  console.log(`console: ${path.relative(process.cwd(), built.outdir) || "."}: ${built.files.length} files; JavaScript ${kib(built.jsBytes)}, ${kib(built.jsGzipBytes)} gzipped (limit ${kib(maxGzipBytes)})`)
  if (built.jsGzipBytes > maxGzipBytes) {
    console.error("console: the JavaScript is over the limit")
    process.exitCode = 1
  }
}
