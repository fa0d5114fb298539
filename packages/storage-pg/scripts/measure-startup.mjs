// Start-up time and memory of the PGlite store, each case in a fresh process (RSS is per process).
// Build first (`npx tsc -b packages/storage-pg`), then: node packages/storage-pg/scripts/measure-startup.mjs [runs]
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { layerPglite, makePglite, PgliteTemplate } from "../dist/index.js"

const self = fileURLToPath(import.meta.url)
const [mode, arg] = process.argv.slice(2)
const mib = (bytes) => Math.round(bytes / 2 ** 20)

/** Child: open the store described by `mode`, run SELECT 1, close; print one JSON line. */
const measure = async (layer) => {
  const started = performance.now()
  let ready = 0
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`SELECT 1`
      ready = performance.now() - started
    }).pipe(Effect.provide(layer))
  )
  const closed = performance.now() - started - ready
  // maxRSS is in KiB: the peak of the whole process, start-up included.
  console.log(JSON.stringify({ ready, closed, rss: mib(process.memoryUsage().rss), peak: Math.round(process.resourceUsage().maxRSS / 1024) }))
}

// "close" includes deleting the copied folder where there is one.
const cases = {
  "new data folder (initdb)": (dir) => layerPglite({ dataDir: dir }),
  "existing data folder": (dir) => layerPglite({ dataDir: dir }),
  "in memory (initdb)": () => layerPglite(),
  "tests: copy of the template folder": () =>
    PgClient.layerFrom(Effect.flatMap(PgliteTemplate.temporaryDataDir, (dataDir) => makePglite({ dataDir }))),
  "tests: in memory from the template tarball": () => PgliteTemplate.layerTemporary
}

if (mode !== undefined && mode !== "--runs") {
  await measure(cases[mode](arg))
} else {
  const runs = Number(process.argv[3] ?? 3)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "lm-measure-"))
  // The template is made once per machine, outside the timings.
  await Effect.runPromise(PgliteTemplate.templateDataDir)
  const child = (name, arg) => {
    const out = spawnSync(process.execPath, [self, name, arg ?? ""], { encoding: "utf8" })
    if (out.status !== 0) throw new Error(out.stderr)
    return JSON.parse(out.stdout.trim().split("\n").at(-1))
  }
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
  console.log(`node ${process.version}, ${os.cpus().length} cpus, ${runs} runs per case (median)`)
  console.log("| case | ready (open + SELECT 1) | close | RSS when ready | peak RSS |")
  console.log("|---|---|---|---|---|")
  for (const name of Object.keys(cases)) {
    const results = []
    for (let run = 0; run < runs; run++) {
      const dir = path.join(work, `db-${run}`)
      if (name === "new data folder (initdb)") fs.rmSync(dir, { recursive: true, force: true })
      results.push(child(name, dir))
    }
    const m = (key) => median(results.map((result) => result[key]))
    console.log(`| ${name} | ${Math.round(m("ready"))} ms | ${Math.round(m("closed"))} ms | ${m("rss")} MiB | ${m("peak")} MiB |`)
  }
  fs.rmSync(work, { recursive: true, force: true })

  // Tests open many stores per process: time open + SELECT 1 + close of each test fast path, alternating,
  // after one warm-up each (wasm compiled, tarball read).
  const timed = async (layer) => {
    const started = performance.now()
    await Effect.runPromise(Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`).pipe(Effect.provide(layer)))
    return performance.now() - started
  }
  const fastPaths = ["tests: copy of the template folder", "tests: in memory from the template tarball"]
  const times = Object.fromEntries(fastPaths.map((name) => [name, []]))
  for (let round = 0; round <= runs * 2; round++) {
    for (const name of fastPaths) {
      const time = await timed(cases[name]())
      if (round > 0) times[name].push(time)
    }
  }
  console.log(`\nSame process, open + SELECT 1 + close, median of ${runs * 2}:`)
  for (const name of fastPaths) console.log(`- ${name}: ${Math.round(median(times[name]))} ms`)
}
