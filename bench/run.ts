/**
 * `npm run bench`: the benchmarks of the hot path, in one run, printed as one table.
 *
 * 1. builds once (`tsc -b`);
 * 2. in-process: `inprocess.ts` in its own process (the engine on memory and PGlite, no HTTP);
 * 3. over HTTP, for each configuration — the floor (`floor.ts`: bare node:http + node:crypto), the bundled
 *    server on memory, on PGlite (a fresh copy of the template data folder) and on PostgreSQL (a fresh database
 *    on the server of `DATABASE_URL`, dropped after; skipped without it) — starts the server as a child process
 *    on a free port, seeds licenses over HTTP, and drives it from a second process (`load.ts`, autocannon,
 *    `BENCH_CONNECTIONS` connections, a warm-up, then `BENCH_RUNS` measured runs) with POST /validate without
 *    and with a fingerprint, then activate+deactivate cycles (connection i cycles fingerprint `cycle-i` on one
 *    license with one seat per connection); the server's RSS is sampled during the measured runs;
 * 4. after the cycles, the cycle license's seats are counted, every fingerprint is deactivated once more, and
 *    the count must then be 0;
 * 5. prints the table (req/s, p50, p99, non-2xx, RSS, ratio to the floor for the same work) and writes it,
 *    with the raw figures, to bench/results/ (not committed).
 *
 * Settings (environment): BENCH_QUICK=1 (1 s warm-up, one 2 s run, short in-process cases), BENCH_WARMUP
 * (seconds, default 5), BENCH_DURATION (seconds per run, default 10), BENCH_RUNS (default 3),
 * BENCH_CONNECTIONS (default 64), BENCH_CONFIGS (comma list of floor, memory, pglite, postgres; default all),
 * BENCH_INPROCESS=0 (skip the in-process part), BENCH_SKIP_BUILD=1, DATABASE_URL (enables PostgreSQL).
 * Nothing is asserted: the figures are read, never compared with a threshold.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import type { InProcessReport } from "./inprocess.ts"
import type { LoadEvent, LoadRequest, LoadSpec, RunFigures } from "./load.ts"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  call,
  childEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  lmBin,
  type Listening,
  machineLine,
  pgliteDataDir,
  repoRoot,
  runNode,
  sampleRss,
  startListening
} from "./support.ts"

const quick = process.env.BENCH_QUICK === "1"
const settings = {
  warmup: envNumber("BENCH_WARMUP", quick ? 1 : 5),
  duration: envNumber("BENCH_DURATION", quick ? 2 : 10),
  runs: envNumber("BENCH_RUNS", quick ? 1 : 3),
  connections: envNumber("BENCH_CONNECTIONS", 64),
  configs: (process.env.BENCH_CONFIGS ?? "floor,memory,pglite,postgres").split(",").map((c) => c.trim()),
  inProcess: process.env.BENCH_INPROCESS !== "0",
  databaseUrl: process.env.DATABASE_URL ?? ""
}
/** Licenses validated over HTTP: connection i uses license i mod this. */
const licenseCount = Math.min(64, settings.connections)

const progress = (line: string) => process.stderr.write(`bench: ${line}\n`)

/** A benchmarked workload. */
type Scenario = "validate" | "validate fp" | "activate+deactivate"
const scenarios: ReadonlyArray<Scenario> = ["validate", "validate fp", "activate+deactivate"]

/** The figures of one scenario on one configuration. */
interface Row {
  readonly config: string
  readonly scenario: Scenario
  readonly runs: ReadonlyArray<RunFigures>
  /** Server RSS in MiB: the peak sampled during the measured runs. */
  readonly rssPeak: number
  /** Seat counts of the cycle license (activate+deactivate on a server only). */
  readonly seats?: SeatCheck
}

/** What the cycle license held after the run and after deactivating every fingerprint once more. */
interface SeatCheck {
  readonly afterRun: number
  readonly listedActive: number
  readonly afterCleanup: number
  readonly ceiling: number
}

/** What seeding left on a server: the keys to validate, the fingerprint activated on each, the cycle license. */
interface Seeded {
  readonly keys: ReadonlyArray<string>
  readonly cycleKey: string
  readonly auth?: ReturnType<typeof bootstrapCredentials>
}

const body = (value: unknown) => JSON.stringify(value)

/** Each connection's loop of requests for a scenario. */
const loopsFor = (apiPath: string, scenario: Scenario, seeded: Seeded): LoadSpec["loops"] => {
  switch (scenario) {
    case "validate":
      return seeded.keys.map((key): ReadonlyArray<LoadRequest> => [{ path: `${apiPath}/validate`, body: body({ license_key: key }) }])
    case "validate fp":
      return seeded.keys.map((key, i): ReadonlyArray<LoadRequest> => [
        { path: `${apiPath}/validate`, body: body({ license_key: key, fingerprint: `validate-${i}` }) }
      ])
    case "activate+deactivate":
      return Array.from({ length: settings.connections }, (_, i): ReadonlyArray<LoadRequest> => [
        { path: `${apiPath}/activate`, body: body({ license_key: seeded.cycleKey, fingerprint: `cycle-${i}` }) },
        { path: `${apiPath}/deactivate`, body: body({ license_key: seeded.cycleKey, fingerprint: `cycle-${i}` }) }
      ])
  }
}

/** Runs `load.ts` against `target`, sampling the target's RSS during each measured run. */
const drive = (target: Listening, loops: LoadSpec["loops"]): Promise<{ runs: Array<RunFigures>; rssPeak: number }> =>
  new Promise((resolve, reject) => {
    const url = new URL(target.base)
    const spec: LoadSpec = {
      origin: url.origin,
      connections: settings.connections,
      warmupSeconds: settings.warmup,
      durationSeconds: settings.duration,
      runs: settings.runs,
      loops
    }
    const child = spawn(process.execPath, [path.join(repoRoot, "bench/load.ts"), JSON.stringify(spec)], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "inherit"]
    })
    const runs: Array<RunFigures> = []
    let rssPeak = 0
    let sampler: ReturnType<typeof sampleRss> | undefined
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      const event = JSON.parse(line) as LoadEvent
      if (event.event === "warmed") {
        progress(`  warm-up: ${fixed(event.figures.rps)} req/s`)
      } else if (event.event === "start") {
        sampler = sampleRss(target.pid)
      } else {
        const rss = sampler?.stop()
        if (rss !== undefined && rss.peak > rssPeak) rssPeak = rss.peak
        runs.push(event.figures)
        const f = event.figures
        progress(
          `  run ${event.run}: ${fixed(f.rps)} req/s, p50 ${fixed(f.p50, 2)} ms, p99 ${fixed(f.p99, 2)} ms, statuses ${
            JSON.stringify(f.statuses)
          }, errors ${f.errors}, RSS ${fixed(rss?.peak ?? Number.NaN)} MiB`
        )
      }
    })
    child.once("error", reject)
    child.once("exit", (code) => (code === 0 ? resolve({ runs, rssPeak }) : reject(new Error(`load.ts exited with ${code}`))))
  })

/** Creates the licenses of the run on a server and checks validate answers `valid` for them. */
const seed = async (base: string, auth: ReturnType<typeof bootstrapCredentials>): Promise<Seeded> => {
  const keys: Array<string> = []
  for (let i = 0; i < licenseCount; i++) {
    const created = await expectStatus(201, base, "POST", "/licenses", { max_activations: 64 }, auth)
    const key = created.body.data.license_key as string
    await expectStatus(201, base, "POST", "/activate", { license_key: key, fingerprint: `validate-${i}` })
    keys.push(key)
  }
  const cycle = await expectStatus(201, base, "POST", "/licenses", { max_activations: settings.connections }, auth)
  for (const fingerprint of [undefined, "validate-0"]) {
    const answer = await expectStatus(200, base, "POST", "/validate", { license_key: keys[0], ...(fingerprint === undefined ? {} : { fingerprint }) })
    if (answer.body.data.valid !== true) throw new Error(`validate of a seeded license is not valid: ${JSON.stringify(answer.body)}`)
  }
  return { keys, cycleKey: cycle.body.data.license_key as string, auth }
}

/** Counts the cycle license's seats, deactivates every cycle fingerprint once more, and counts again. */
const checkSeats = async (base: string, seeded: Seeded): Promise<SeatCheck> => {
  const route = `/licenses/${encodeURIComponent(seeded.cycleKey)}`
  const before = await expectStatus(200, base, "GET", route, undefined, seeded.auth)
  const listedActive = (before.body.data.machines as ReadonlyArray<{ readonly status: string }>).filter((m) => m.status === "active").length
  for (let i = 0; i < settings.connections; i++) {
    await expectStatus(200, base, "POST", "/deactivate", { license_key: seeded.cycleKey, fingerprint: `cycle-${i}` })
  }
  const after = await expectStatus(200, base, "GET", route, undefined, seeded.auth)
  return {
    afterRun: before.body.data.activation_count as number,
    listedActive,
    afterCleanup: after.body.data.activation_count as number,
    ceiling: settings.connections
  }
}

/** Waits until the server answers its health check (the store is open before it listens, but be sure). */
const ready = async (base: string) => {
  for (let attempt = 0; attempt < 100; attempt++) {
    const answer = await call(base, "GET", "/health").catch(() => undefined)
    if (answer?.status === 200) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${base}/health never answered 200`)
}

/** One configuration: start it, seed it, drive every scenario, check the seats, stop it. */
const benchConfig = async (
  config: string,
  start: () => Promise<{ readonly target: Listening; readonly cleanup: () => Promise<void> }>
): Promise<Array<Row>> => {
  progress(`${config}: starting`)
  const { target, cleanup } = await start()
  const rows: Array<Row> = []
  try {
    const apiPath = new URL(target.base).pathname
    let seeded: Seeded
    if (config === "floor") {
      seeded = {
        keys: Array.from({ length: licenseCount }, (_, i) => `BNCH-FLOR-0000-${String(i).padStart(4, "0")}`),
        cycleKey: "BNCH-FLOR-CYCL-0000"
      }
    } else {
      await ready(target.base)
      seeded = await seed(target.base, bootstrapAuth)
    }
    progress(`${config}: listening at ${target.base}, pid ${target.pid}, RSS ${fixed(rssNow(target.pid))} MiB after seeding`)
    for (const scenario of scenarios) {
      progress(`${config}: ${scenario}`)
      const { runs, rssPeak } = await drive(target, loopsFor(apiPath, scenario, seeded))
      const seats = scenario === "activate+deactivate" && config !== "floor" ? await checkSeats(target.base, seeded) : undefined
      if (seats !== undefined) progress(`  seats: ${JSON.stringify(seats)}`)
      rows.push({ config, scenario, runs, rssPeak, ...(seats === undefined ? {} : { seats }) })
    }
  } finally {
    await target.stop()
    await cleanup()
  }
  return rows
}

const rssNow = (pid: number) => {
  const sampler = sampleRss(pid)
  return sampler.stop().last
}

/** The credentials every bundled server of this run is started with. */
const bootstrapAuth = bootstrapCredentials()

const serverEnv = (store: Record<string, string>) =>
  childEnv({
    ...store,
    PORT: "0",
    HOST: "127.0.0.1",
    LM_BOOTSTRAP_CONSUMER_KEY: bootstrapAuth.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: bootstrapAuth.consumerSecret,
    LM_RATE_LIMIT: "off"
  })

const starters: Record<string, () => Promise<{ readonly target: Listening; readonly cleanup: () => Promise<void> }>> = {
  floor: async () => ({
    target: await startListening([path.join(repoRoot, "bench/floor.ts")], childEnv({ PORT: "0", HOST: "127.0.0.1" })),
    cleanup: async () => {}
  }),
  memory: async () => ({ target: await startListening([lmBin, "serve"], serverEnv({ LM_STORAGE: "memory" })), cleanup: async () => {} }),
  pglite: async () => {
    const data = await pgliteDataDir()
    try {
      return { target: await startListening([lmBin, "serve"], serverEnv({ LM_DATA_DIR: data.dir })), cleanup: data.remove }
    } catch (error) {
      await data.remove()
      throw error
    }
  },
  postgres: async () => {
    const database = await freshPostgresDatabase(settings.databaseUrl, "http")
    try {
      return { target: await startListening([lmBin, "serve"], serverEnv({ DATABASE_URL: database.url })), cleanup: database.drop }
    } catch (error) {
      await database.drop()
      throw error
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------

const startedAt = new Date()
progress(`${machineLine()}`)
progress(
  `settings: ${settings.connections} connections, warm-up ${settings.warmup} s, ${settings.runs} × ${settings.duration} s${quick ? " (quick)" : ""}`
)
if (process.env.BENCH_SKIP_BUILD !== "1") {
  progress("building (tsc -b)")
  await runNode([path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-b"], process.env)
}

let inProcess: InProcessReport | undefined
if (settings.inProcess) {
  progress("in-process (memory, PGlite)")
  const output = await runNode([path.join(repoRoot, "bench/inprocess.ts"), "--json"], childEnv({ BENCH_CONNECTIONS: String(settings.connections) }))
  const last = output.trim().split("\n").filter((line) => line.startsWith("{")).at(-1)
  inProcess = JSON.parse(last ?? "null") as InProcessReport
}

const rows: Array<Row> = []
const skipped: Array<string> = []
for (const config of settings.configs) {
  const start = starters[config]
  if (start === undefined) throw new Error(`BENCH_CONFIGS: unknown configuration ${config}`)
  if (config === "postgres" && settings.databaseUrl === "") {
    skipped.push("postgres (DATABASE_URL is not set)")
    continue
  }
  try {
    rows.push(...(await benchConfig(config, start)))
  } catch (error) {
    progress(`${config}: FAILED: ${error instanceof Error ? error.message : String(error)}`)
    skipped.push(`${config} (failed: ${(error instanceof Error ? error.message : String(error)).split("\n")[0]})`)
  }
}

// ---------------------------------------------------------------------------------------------------------------

const summary = (row: Row) => {
  const rps = row.runs.map((r) => r.rps)
  return {
    rps: median(rps),
    minRps: Math.min(...rps),
    maxRps: Math.max(...rps),
    p50: median(row.runs.map((r) => r.p50)),
    p99: median(row.runs.map((r) => r.p99)),
    worstP99: Math.max(...row.runs.map((r) => r.p99)),
    non2xx: row.runs.reduce((n, r) => n + Object.entries(r.statuses).filter(([s]) => !s.startsWith("2")).reduce((a, [, c]) => a + c, 0), 0),
    errors: row.runs.reduce((n, r) => n + r.errors + r.timeouts, 0),
    bytes: median(row.runs.map((r) => r.bytesPerResponse))
  }
}
const floorOf = (scenario: Scenario) => {
  const row = rows.find((r) => r.config === "floor" && r.scenario === scenario)
  return row === undefined ? Number.NaN : summary(row).rps
}

const httpTable = markdownTable(
  ["config", "scenario", "req/s (median)", "runs min–max", "p50 ms", "p99 ms (worst)", "non-2xx / errors", "bytes/resp", "server RSS MiB", "× floor"],
  rows.map((row) => {
    const s = summary(row)
    const cycles = row.scenario === "activate+deactivate" ? ` (${fixed(s.rps / 2)} cycles/s)` : ""
    return [
      row.config,
      row.scenario,
      `${fixed(s.rps)}${cycles}`,
      `${fixed(s.minRps)}–${fixed(s.maxRps)}`,
      fixed(s.p50, 2),
      `${fixed(s.p99, 2)} (${fixed(s.worstP99, 2)})`,
      `${s.non2xx} / ${s.errors}`,
      fixed(s.bytes),
      fixed(row.rssPeak),
      row.config === "floor" ? "1.00" : fixed(s.rps / floorOf(row.scenario), 2)
    ]
  })
)

const seatLines = rows.filter((r) => r.seats !== undefined).map((r) => {
  const seats = r.seats!
  const exact = seats.afterCleanup === 0 && seats.afterRun === seats.listedActive && seats.afterRun <= seats.ceiling
  return `- ${r.config}: ${seats.afterRun} seats held right after the cycles (${seats.listedActive} machines listed active, ceiling ${seats.ceiling}); after deactivating every fingerprint once more: ${seats.afterCleanup} (must be 0) — ${exact ? "exact" : "WRONG"}`
})

const inProcessTable = inProcess === undefined ? "" : markdownTable(
  ["store", "case", "fibers", "ops/s", "µs/op"],
  inProcess.figures.map((f) => [f.store, f.case, String(f.concurrency), fixed(f.opsPerSecond), fixed(f.meanMicros, 1)])
)

const report = [
  `## Benchmark run of ${startedAt.toISOString()}`,
  "",
  `${machineLine()}; ${settings.connections} connections, warm-up ${settings.warmup} s, ${settings.runs} measured runs of ${settings.duration} s${quick ? " (BENCH_QUICK)" : ""}.`,
  "",
  "### Over HTTP (load generator in a separate process)",
  "",
  httpTable,
  "",
  ...(seatLines.length > 0 ? ["Seat counts of the activate+deactivate license:", "", ...seatLines, ""] : []),
  ...(skipped.length > 0 ? [`Not measured: ${skipped.join("; ")}.`, ""] : []),
  ...(inProcess === undefined ? [] : [
    "### In process (no HTTP)",
    "",
    inProcessTable,
    "",
    `Seats held on the cycle license after the in-process cycles (must be 0): ${JSON.stringify(inProcess.seatsAfterCycles)}.`,
    ""
  ])
].join("\n")

console.log(report)
const results = path.join(repoRoot, "bench/results")
fs.mkdirSync(results, { recursive: true })
fs.writeFileSync(path.join(results, "latest.md"), `${report}\n`)
fs.writeFileSync(path.join(results, "latest.json"), `${JSON.stringify({ startedAt, settings: { ...settings, databaseUrl: settings.databaseUrl !== "" }, rows, inProcess, skipped }, null, 2)}\n`)
progress(`written: bench/results/latest.md and latest.json`)
