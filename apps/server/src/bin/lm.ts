#!/usr/bin/env node
/**
 * `lm`: the bundled server and its command line (CONTRACT §13; the commands in `../cli/`, run by `run.ts`).
 * `lm --help` lists them. This entry first checks the Node.js version against the project's `engines.node` (the
 * root package.json), before anything that could crash on an older one is loaded: there it prints one line saying
 * what is needed and how to run `lm`, and exits 1.
 */
import { readFileSync } from "node:fs"
import * as nodeModule from "node:module"
import { satisfiesEngines, tooOldMessage } from "./nodeVersion.js"

// V8's compiled code of the modules below is kept on disk (in the OS's temporary folder, or `NODE_COMPILE_CACHE`)
// and reused by the next start, which then skips most of compiling them. (Absent before Node 22.1.)
nodeModule.enableCompileCache?.()

/** `engines.node` of the root package.json (src/bin and dist/bin are both four folders below it); none when unreadable. */
const engines = (): string => {
  try {
    return JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")).engines?.node ?? ""
  } catch {
    return ""
  }
}

const required = engines()
if (!satisfiesEngines(process.versions.node, required)) {
  process.stderr.write(`${tooOldMessage(`v${process.versions.node}`, required)}\n`)
  process.exit(1)
}
await import("./run.js")
