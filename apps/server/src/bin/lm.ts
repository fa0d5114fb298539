#!/usr/bin/env node
/**
 * `lm`: the bundled server and its command line (CONTRACT §13; the commands in `../cli/`, run by `run.ts`).
 * `lm --help` lists them. This entry first checks the Node.js version against the project's `engines.node` (the
 * root package.json), before anything that could crash on an older one is loaded: there it prints one line saying
 * what is needed and how to run `lm`, and exits 1. It then turns on Node's compile cache (under the OS temp folder,
 * or `NODE_COMPILE_CACHE`), so that later starts skip compiling the several hundred modules `lm` loads, and runs
 * the bundle of those modules when it is current (`bundled.ts`), the built modules themselves otherwise.
 */
import { readFileSync } from "node:fs"
import * as nodeModule from "node:module"
import { currentBundle } from "./bundled.js"
import { satisfiesEngines, tooOldMessage } from "./nodeVersion.js"

/** The repository's root: src/bin and dist/bin are both four folders below it. */
const root = new URL("../../../../", import.meta.url)

/** `engines.node` of the root package.json; none when unreadable. */
const engines = (): string => {
  try {
    return JSON.parse(readFileSync(new URL("package.json", root), "utf8")).engines?.node ?? ""
  } catch {
    return ""
  }
}

const required = engines()
if (!satisfiesEngines(process.versions.node, required)) {
  process.stderr.write(`${tooOldMessage(`v${process.versions.node}`, required)}\n`)
  process.exit(1)
}
// Best effort (Node 22.1+): a cache folder it cannot use leaves `lm` as it was, only slower to start.
try {
  nodeModule.enableCompileCache?.()
} catch {}
await import((currentBundle(new URL("../bundle/", import.meta.url), root) ?? new URL("./run.js", import.meta.url)).href)
