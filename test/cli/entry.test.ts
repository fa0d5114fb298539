/**
 * Running `lm` (issue 27): on a Node.js older than the project's `engines.node` the built entry stops at once with
 * one line naming the Node.js needed and how to run it (`npm start`, `npm run lm --`), instead of crashing inside a
 * dependency; `lm --version` prints the version and `lm serve --help` prints help instead of starting a server.
 * Runs the built binary (`npm test` builds first), from its bundle (`npm test` bundles after building).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { builtLm } from "../support/built.js"
import { describe, expect, it } from "vitest"
import { satisfiesEngines, tooOldMessage } from "../../apps/server/src/bin/nodeVersion.js"
import { currentBundle } from "../../apps/server/src/bin/bundled.js"
import { pathToFileURL } from "node:url"

const root = join(import.meta.dirname, "..", "..")
const bin = builtLm()
const engines = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).engines.node as string
const version = JSON.parse(readFileSync(join(root, "apps/server/package.json"), "utf8")).version as string

/** Debian's Node.js, when it is older than the project's (it is 20 on the CI image). */
const systemNode = "/usr/bin/node"
const olderNode = existsSync(systemNode) && !satisfiesEngines(execFileSync(systemNode, ["--version"], { encoding: "utf8" }).trim(), engines)

describe("lm's entry", () => {
  it("compares Node.js versions with engines.node", () => {
    expect(["20.20.2", "22.18.9", "22.19.0", "22.20.1", "24.0.0", "v24.21.0"].map((v) => satisfiesEngines(v, ">=22.19")))
      .toEqual([false, false, true, true, true, true])
    expect(satisfiesEngines("20.0.0", "")).toBe(true)
  })

  it.skipIf(!olderNode)("stops at once on an older Node.js with one line saying what is needed and how to run lm", () => {
    for (const args of [["serve"], ["--version"]]) {
      const run = spawnSync(systemNode, [bin, ...args], { encoding: "utf8", timeout: 30_000, env: { ...process.env, PORT: "0" } })
      expect(run.status, run.stderr).toBe(1)
      expect(run.stdout).toBe("")
      const lines = run.stderr.trim().split("\n")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(`lm needs Node.js ${engines}`)
      expect(lines[0]).toContain("npm start")
      expect(lines[0]).toContain("npm run lm --")
    }
    expect(tooOldMessage("v20.1.0", ">=22.19")).not.toContain("\n")
  })

  it("prints the version and serve's help on the project's Node.js, without starting a server", () => {
    const lm = (...args: Array<string>) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 60_000, env: { ...process.env, PORT: "0" } })
    const shown = lm("--version")
    expect([shown.status, shown.stdout.trim()]).toEqual([0, `lm v${version}`])
    const help = lm("serve", "--help")
    expect(help.status).toBe(0)
    expect(help.stdout).toContain("USAGE")
    expect(help.stdout).toContain("lm serve")
    expect(help.stdout + help.stderr).not.toContain("Listening on")
  })

  it("runs the command line from its bundle, loading no module of the workspace packages one by one", () => {
    const bundle = currentBundle(pathToFileURL(join(root, "apps/server/dist/bundle/")), pathToFileURL(`${root}/`))
    expect(bundle?.href, "the bundle is missing or older than the build: run `node apps/server/bundle.ts` (npm test bundles)")
      .toBe(pathToFileURL(join(root, "apps/server/dist/bundle/run.js")).href)
    // Every file: module `lm` loads, written to stderr as it exits.
    const recorder = `import { registerHooks } from "node:module"
const loaded = []
registerHooks({ load(url, context, next) { if (url.startsWith("file:")) loaded.push(url); return next(url, context) } })
process.on("exit", () => process.stderr.write(JSON.stringify(loaded)))`
    const run = spawnSync(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(recorder)}`, bin, "--version"], {
      encoding: "utf8",
      timeout: 60_000
    })
    expect(run.status, run.stderr).toBe(0)
    const loaded = (JSON.parse(run.stderr) as Array<string>).map((url) => url.slice(pathToFileURL(root).href.length + 1))
    expect(loaded).toContain("apps/server/dist/bundle/run.js")
    expect(loaded.filter((file) => /^(packages\/|node_modules\/effect\/|apps\/server\/dist\/(?!bin\/|bundle\/))/.test(file))).toEqual([])
    expect(loaded.filter((file) => file.startsWith("apps/server/dist/bin/")).sort()).toEqual(
      ["apps/server/dist/bin/lm.js", "apps/server/dist/bin/bundled.js", "apps/server/dist/bin/nodeVersion.js"].sort()
    )
  })
})
