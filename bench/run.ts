/**
 * `npm run bench`: the benchmarks of the hot path, in one run, printed as one table.
 *
 * 1. builds once (`tsc -b`);
 * 2. in process: `inprocess.ts` in its own process (the engine on memory and PGlite, no HTTP);
 * 3. over HTTP: the floor (`floor.ts`: bare node:http + node:crypto) is started and stays up; then for each
 *    configuration — the bundled server on memory, on PGlite (a fresh copy of the template data folder), on
 *    PostgreSQL (a fresh database on the server of `DATABASE_URL`, dropped after; skipped without it) — the
 *    server starts as a child process on a free port, licenses are seeded over HTTP, and a second process
 *    (`load.ts`, autocannon, `BENCH_CONNECTIONS` connections) drives each scenario: a warm-up, then
 *    `BENCH_RUNS` measured runs, each followed by a floor run of the same work, so that every ratio compares
 *    two runs made under the same background load. Scenarios: POST /validate without and with a fingerprint;
 *    activate+deactivate cycles, connection i cycling fingerprint `cycle-i` on one license with one seat per
 *    connection, and again with connection i on its own single-seat license. The server's RSS is sampled
 *    during its measured runs;
 * 4. after each cycle scenario, the seats are counted, every fingerprint is deactivated once more, and the
 *    count must then be 0 (with single-seat licenses, a leaked seat would also have shown as 422s);
 * 5. prints the table (req/s, p50, p99, non-2xx, RSS, ratio to the floor) and writes it, with the raw figures,
 *    to bench/results/ (not committed).
 *
 * Settings (environment): BENCH_QUICK=1 (1 s warm-up, one 2 s run, short in-process cases), BENCH_WARMUP
 * (seconds, default 5), BENCH_DURATION (seconds per run, default 10), BENCH_RUNS (default 3),
 * BENCH_CONNECTIONS (default 64), BENCH_CONFIGS (comma list of floor, memory, pglite, postgres and the opt-in
 * postgres-nosync, a database with `synchronous_commit = off`, and memory-limits, pglite-limits, postgres-limits,
 * memory-redis-limits: the same with rate limits on, see `limitsOn` of support.ts; default floor,memory,pglite,postgres),
 * BENCH_SCENARIOS (comma list: validate, validate fp, activate+deactivate, "activate+deactivate, 64 licenses";
 * default all), BENCH_INPROCESS=0 (skip the in-process part), BENCH_SKIP_BUILD=1, DATABASE_URL (enables PostgreSQL).
 * Nothing is asserted: the figures are read, never compared with a threshold.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { InProcessReport } from "./inprocess.ts"
import type { LoadRequest, LoadSpec, LoadTarget, RunFigures } from "./load.ts"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  call,
  childEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  lmBin,
  type Listening,
  machineLine,
  limitsOn,
  pgliteDataDir,
  ready,
  repoRoot,
  rssMiB,
  runLoad,
  runNode,
  runSql,
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
type Scenario = "validate" | "validate fp" | "activate+deactivate" | "activate+deactivate, 64 licenses"
const allScenarios: ReadonlyArray<Scenario> = ["validate", "validate fp", "activate+deactivate", "activate+deactivate, 64 licenses"]
/** `BENCH_SCENARIOS` (comma list of the names above) runs only those, in that order; default all. */
const scenarios = process.env.BENCH_SCENARIOS === undefined
  ? allScenarios
  : process.env.BENCH_SCENARIOS.split(",").map((n) => n.trim()).filter((n): n is Scenario => allScenarios.includes(n as Scenario))
const isCycle = (scenario: Scenario) => scenario.startsWith("activate")

/** The figures of one scenario on one configuration. */
interface Row {
  readonly config: string
  readonly scenario: Scenario
  readonly runs: ReadonlyArray<RunFigures>
  /** The floor's runs, each made right after the configuration's run of the same number. */
  readonly floorRuns: ReadonlyArray<RunFigures>
  /** Server RSS in MiB: the peak sampled during the measured runs. */
  readonly rssPeak: number
  /** Seat counts after activate+deactivate (bundled server only). */
  readonly seats?: SeatCheck
}

/** What the cycle licenses held after the run and after deactivating every fingerprint once more. */
interface SeatCheck {
  readonly licenses: number
  /** Sum of `activation_count` right after the run. */
  readonly afterRun: number
  /** Machines listed with status `active` right after the run. */
  readonly listedActive: number
  /** Sum of `activation_count` after deactivating every cycle fingerprint once more (must be 0). */
  readonly afterCleanup: number
  /** Sum of the ceilings. */
  readonly ceiling: number
}

/**
 * What seeding left on a server: the keys to validate (fingerprint `validate-i` active on key i), the cycle
 * license (one seat per connection) and one license per connection with a single seat.
 */
interface Seeded {
  readonly keys: ReadonlyArray<string>
  readonly cycleKey: string
  readonly spreadKeys: ReadonlyArray<string>
}

const body = (value: unknown) => JSON.stringify(value)

/** Each connection's loop of requests for a scenario. */
const loopsFor = (apiPath: string, scenario: Scenario, seeded: Seeded): LoadTarget["loops"] => {
  const cycle = (key: string, fingerprint: string): ReadonlyArray<LoadRequest> => [
    { path: `${apiPath}/activate`, body: body({ license_key: key, fingerprint }) },
    { path: `${apiPath}/deactivate`, body: body({ license_key: key, fingerprint }) }
  ]
  switch (scenario) {
    case "validate":
      return seeded.keys.map((key): ReadonlyArray<LoadRequest> => [{ path: `${apiPath}/validate`, body: body({ license_key: key }) }])
    case "validate fp":
      return seeded.keys.map((key, i): ReadonlyArray<LoadRequest> => [
        { path: `${apiPath}/validate`, body: body({ license_key: key, fingerprint: `validate-${i}` }) }
      ])
    case "activate+deactivate":
      return Array.from({ length: settings.connections }, (_, i) => cycle(seeded.cycleKey, `cycle-${i}`))
    case "activate+deactivate, 64 licenses":
      return Array.from({ length: settings.connections }, (_, i) => cycle(seeded.spreadKeys[i % seeded.spreadKeys.length]!, `cycle-${i}`))
  }
}

/** A server under test: its address and pid, and the requests of each scenario. */
interface Target {
  readonly listening: Listening
  readonly seeded: Seeded
}

const targetOf = (target: Target, scenario: Scenario): LoadTarget => {
  const url = new URL(target.listening.base)
  return { origin: url.origin, loops: loopsFor(url.pathname, scenario, target.seeded) }
}

/**
 * Runs `load.ts` on `target` (and on `floor`, alternating run by run, when given), sampling the target's RSS
 * during its measured runs.
 */
const drive = async (
  scenario: Scenario,
  target: Target,
  floor: Target | undefined
): Promise<{ runs: Array<RunFigures>; floorRuns: Array<RunFigures>; rssPeak: number }> => {
  const spec: LoadSpec = {
    targets: floor === undefined ? [targetOf(target, scenario)] : [targetOf(target, scenario), targetOf(floor, scenario)],
    connections: settings.connections,
    warmupSeconds: settings.warmup,
    durationSeconds: settings.duration,
    runs: settings.runs
  }
  const runs: Array<RunFigures> = []
  const floorRuns: Array<RunFigures> = []
  let rssPeak = 0
  let sampler: ReturnType<typeof sampleRss> | undefined
  const name = (index: number) => (index === 0 ? "" : "floor ")
  await runLoad(spec, (event) => {
    if (event.event === "warmed") {
      progress(`  ${name(event.target)}warm-up: ${fixed(event.figures.rps)} req/s`)
    } else if (event.event === "start") {
      if (event.target === 0) sampler = sampleRss(target.listening.pid)
    } else {
      const f = event.figures
      let rss = ""
      if (event.target === 0) {
        const sampled = sampler?.stop()
        if (sampled !== undefined && sampled.peak > rssPeak) rssPeak = sampled.peak
        rss = `, RSS ${fixed(sampled?.peak ?? Number.NaN)} MiB`
        runs.push(f)
      } else {
        floorRuns.push(f)
      }
      progress(
        `  ${name(event.target)}run ${event.run}: ${fixed(f.rps)} req/s, p50 ${fixed(f.p50, 2)} ms, p99 ${fixed(f.p99, 2)} ms, statuses ${
          JSON.stringify(f.statuses)
        }, errors ${f.errors + f.timeouts}${rss}`
      )
    }
  })
  return { runs, floorRuns, rssPeak }
}

/** Creates the licenses of the run on a server and checks validate answers `valid` for them. */
const seed = async (base: string): Promise<Seeded> => {
  const create = async (maxActivations: number) =>
    (await expectStatus(201, base, "POST", "/licenses", { max_activations: maxActivations }, bootstrapAuth)).body.data.license_key as string
  const keys: Array<string> = []
  for (let i = 0; i < licenseCount; i++) {
    const key = await create(64)
    await expectStatus(201, base, "POST", "/activate", { license_key: key, fingerprint: `validate-${i}` })
    keys.push(key)
  }
  const cycleKey = await create(settings.connections)
  const spreadKeys: Array<string> = []
  for (let i = 0; i < settings.connections; i++) spreadKeys.push(await create(1))
  for (const fingerprint of [undefined, "validate-0"]) {
    const answer = await expectStatus(200, base, "POST", "/validate", { license_key: keys[0], ...(fingerprint === undefined ? {} : { fingerprint }) })
    if (answer.body.data.valid !== true) throw new Error(`validate of a seeded license is not valid: ${JSON.stringify(answer.body)}`)
  }
  return { keys, cycleKey, spreadKeys }
}

/**
 * Counts the seats of the licenses a cycle scenario used, deactivates every cycle fingerprint once more, and
 * counts again.
 */
const checkSeats = async (base: string, scenario: Scenario, seeded: Seeded): Promise<SeatCheck> => {
  const pairs = Array.from({ length: settings.connections }, (_, i) => ({
    key: scenario === "activate+deactivate" ? seeded.cycleKey : seeded.spreadKeys[i % seeded.spreadKeys.length]!,
    fingerprint: `cycle-${i}`
  }))
  const licenses = [...new Set(pairs.map((p) => p.key))]
  const count = async () => {
    let held = 0
    let listed = 0
    let ceiling = 0
    for (const key of licenses) {
      const { body: answer } = await expectStatus(200, base, "GET", `/licenses/${encodeURIComponent(key)}`, undefined, bootstrapAuth)
      held += answer.data.activation_count as number
      listed += (answer.data.machines as ReadonlyArray<{ readonly status: string }>).filter((m) => m.status === "active").length
      ceiling += answer.data.max_activations as number
    }
    return { held, listed, ceiling }
  }
  const before = await count()
  for (const { key, fingerprint } of pairs) {
    await expectStatus(200, base, "POST", "/deactivate", { license_key: key, fingerprint })
  }
  const after = await count()
  return { licenses: licenses.length, afterRun: before.held, listedActive: before.listed, afterCleanup: after.held, ceiling: before.ceiling }
}

/** A started configuration and how to stop it and remove its store. */
interface Started {
  readonly listening: Listening
  readonly cleanup: () => Promise<void>
}

/** Keys of the right format for the floor, which keeps no state. */
const floorSeeded: Seeded = {
  keys: Array.from({ length: licenseCount }, (_, i) => `BNCH-FLOR-0000-${String(i).padStart(4, "0")}`),
  cycleKey: "BNCH-FLOR-CYCL-0000",
  spreadKeys: Array.from({ length: settings.connections }, (_, i) => `BNCH-FLOR-SPRD-${String(i).padStart(4, "0")}`)
}

/** One configuration: start it, seed it, drive every scenario (paired with the floor), check the seats, stop it. */
const benchConfig = async (config: string, start: () => Promise<Started>, floor: Target | undefined): Promise<Array<Row>> => {
  progress(`${config}: starting`)
  const { listening, cleanup } = await start()
  const rows: Array<Row> = []
  try {
    await ready(listening.base)
    const target: Target = { listening, seeded: await seed(listening.base) }
    progress(`${config}: listening at ${listening.base}, pid ${listening.pid}, RSS ${fixed(rssMiB(listening.pid))} MiB after seeding`)
    for (const scenario of scenarios) {
      progress(`${config}: ${scenario}`)
      const { runs, floorRuns, rssPeak } = await drive(scenario, target, floor)
      const seats = isCycle(scenario) ? await checkSeats(listening.base, scenario, target.seeded) : undefined
      if (seats !== undefined) progress(`  seats: ${JSON.stringify(seats)}`)
      rows.push({ config, scenario, runs, floorRuns, rssPeak, ...(seats === undefined ? {} : { seats }) })
    }
  } finally {
    await listening.stop()
    await cleanup()
  }
  return rows
}

/** The credentials every bundled server of this run is started with. */
const bootstrapAuth = bootstrapCredentials()

const serverEnv = (store: Record<string, string>, extra: Record<string, string> = {}) =>
  bundledServerEnv(bootstrapAuth, store, extra)

/** A configuration's starter with rate limits on (`limitsOn`) and `extra` settings. */
const withLimits = (store: () => Promise<Record<string, string>>, cleanup: () => Promise<void> = async () => {}, extra: Record<string, string> = {}) =>
async (): Promise<Started> => {
  const env = await store()
  return { listening: await startListening([lmBin, "serve"], serverEnv(env, { ...limitsOn, ...extra })), cleanup }
}

const startFloor = () => startListening([path.join(repoRoot, "bench/floor.ts")], childEnv({ PORT: "0", HOST: "127.0.0.1" }))

const starters: Record<string, () => Promise<Started>> = {
  memory: async () => ({ listening: await startListening([lmBin, "serve"], serverEnv({ LM_STORAGE: "memory" })), cleanup: async () => {} }),
  pglite: async () => {
    const data = await pgliteDataDir()
    try {
      return { listening: await startListening([lmBin, "serve"], serverEnv({ LM_DATA_DIR: data.dir })), cleanup: data.remove }
    } catch (error) {
      await data.remove()
      throw error
    }
  },
  postgres: async () => {
    const database = await freshPostgresDatabase(settings.databaseUrl, "http")
    try {
      return { listening: await startListening([lmBin, "serve"], serverEnv({ DATABASE_URL: database.url })), cleanup: database.drop }
    } catch (error) {
      await database.drop()
      throw error
    }
  },
  // Rate limits on (issue 17): local buckets only on memory and PGlite (one process), shared through the
  // database on PostgreSQL, through Redis (REDIS_URL, default redis://127.0.0.1:6379) with `memory-redis-limits`.
  "memory-limits": withLimits(async () => ({ LM_STORAGE: "memory" })),
  "memory-redis-limits": withLimits(async () => ({ LM_STORAGE: "memory" }), async () => {}, {
    LM_REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
  }),
  "pglite-limits": async () => {
    const data = await pgliteDataDir()
    try {
      return await withLimits(async () => ({ LM_DATA_DIR: data.dir }), data.remove)()
    } catch (error) {
      await data.remove()
      throw error
    }
  },
  "postgres-limits": async () => {
    const database = await freshPostgresDatabase(settings.databaseUrl, "limits")
    try {
      return await withLimits(async () => ({ DATABASE_URL: database.url }), database.drop)()
    } catch (error) {
      await database.drop()
      throw error
    }
  },
  "postgres-nosync": async () => {
    // Commits return before their WAL reaches the disk: shows what the commit's fsync costs.
    const database = await freshPostgresDatabase(settings.databaseUrl, "nosync")
    try {
      await runSql(settings.databaseUrl, [`ALTER DATABASE ${database.name} SET synchronous_commit = off`])
      return { listening: await startListening([lmBin, "serve"], serverEnv({ DATABASE_URL: database.url })), cleanup: database.drop }
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
  progress(`in-process (memory, PGlite${settings.databaseUrl === "" ? "" : ", PostgreSQL"})`)
  const output = await runNode(
    [path.join(repoRoot, "bench/inprocess.ts"), "--json"],
    childEnv({ BENCH_CONNECTIONS: String(settings.connections), DATABASE_URL: settings.databaseUrl }),
    { showProgress: true }
  )
  const last = output.trim().split("\n").filter((line) => line.startsWith("{")).at(-1)
  inProcess = JSON.parse(last ?? "null") as InProcessReport
}

const rows: Array<Row> = []
const skipped: Array<string> = []
const servers = settings.configs.filter((c) => c !== "floor")
for (const config of servers) {
  if (starters[config] === undefined) throw new Error(`BENCH_CONFIGS: unknown configuration ${config}`)
}
const floorListening = settings.configs.includes("floor") ? await startFloor() : undefined
const floor: Target | undefined = floorListening === undefined ? undefined : { listening: floorListening, seeded: floorSeeded }
try {
  if (floor !== undefined) progress(`floor: listening at ${floor.listening.base}, pid ${floor.listening.pid}`)
  if (floor !== undefined && servers.length === 0) {
    // The floor alone: its own figures, nothing to pair with.
    for (const scenario of scenarios) {
      progress(`floor: ${scenario}`)
      const { runs, rssPeak } = await drive(scenario, floor, undefined)
      rows.push({ config: "floor", scenario, runs, floorRuns: runs, rssPeak })
    }
  }
  for (const config of servers) {
    if (config.startsWith("postgres") && settings.databaseUrl === "") {
      skipped.push(`${config} (DATABASE_URL is not set)`)
      continue
    }
    try {
      rows.push(...(await benchConfig(config, starters[config]!, floor)))
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      progress(`${config}: FAILED: ${message}`)
      skipped.push(`${config} (failed: ${message.split("\n")[0]})`)
    }
  }
} finally {
  await floorListening?.stop()
}

// ---------------------------------------------------------------------------------------------------------------

/** Median and spread of a list of runs. */
const summary = (runs: ReadonlyArray<RunFigures>) => {
  const rps = runs.map((r) => r.rps)
  return {
    rps: median(rps),
    minRps: Math.min(...rps),
    maxRps: Math.max(...rps),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    worstP99: Math.max(...runs.map((r) => r.p99)),
    non2xx: runs.reduce((n, r) => n + Object.entries(r.statuses).filter(([s]) => !s.startsWith("2")).reduce((a, [, c]) => a + c, 0), 0),
    errors: runs.reduce((n, r) => n + r.errors + r.timeouts, 0),
    bytes: median(runs.map((r) => r.bytesPerResponse))
  }
}

/** The median over pairs of (configuration run ÷ floor run of the same number). */
const pairedRatio = (row: Row): number =>
  row.floorRuns.length === 0 || row.config === "floor"
    ? Number.NaN
    : median(row.runs.map((r, i) => r.rps / (row.floorRuns[i]?.rps ?? Number.NaN)).filter(Number.isFinite))

const tableRow = (config: string, scenario: Scenario, runs: ReadonlyArray<RunFigures>, rss: number, ratio: string) => {
  const s = summary(runs)
  const cycles = isCycle(scenario) ? ` (${fixed(s.rps / 2)} cycles/s)` : ""
  return [
    config,
    scenario,
    `${fixed(s.rps)}${cycles}`,
    `${fixed(s.minRps)}–${fixed(s.maxRps)}`,
    fixed(s.p50, 2),
    `${fixed(s.p99, 2)} (${fixed(s.worstP99, 2)})`,
    `${s.non2xx} / ${s.errors}`,
    fixed(s.bytes),
    fixed(rss),
    ratio
  ]
}

// The floor's own rows gather its runs of every pairing, per scenario.
const floorRows = scenarios.flatMap((scenario) => {
  const runs = rows.filter((r) => r.scenario === scenario).flatMap((r) => r.floorRuns)
  return runs.length === 0 ? [] : [tableRow("floor", scenario, runs, Number.NaN, "1")]
})

const httpTable = markdownTable(
  ["config", "scenario", "req/s (median)", "runs min–max", "p50 ms", "p99 ms (worst)", "non-2xx / errors", "bytes/resp", "server RSS MiB", "× floor (paired)"],
  [
    ...floorRows,
    ...rows.filter((r) => r.config !== "floor").map((row) => tableRow(row.config, row.scenario, row.runs, row.rssPeak, fixed(pairedRatio(row), 2)))
  ]
)

const seatLines = rows.filter((r) => r.seats !== undefined).map((r) => {
  const seats = r.seats!
  const exact = seats.afterCleanup === 0 && seats.afterRun === seats.listedActive && seats.afterRun <= seats.ceiling
  return `- ${r.config}, ${r.scenario}: ${seats.afterRun} seats held right after the run on ${seats.licenses} license(s) (${seats.listedActive} machines listed active, ceiling ${seats.ceiling}); after deactivating every fingerprint once more: ${seats.afterCleanup} (must be 0) — ${exact ? "exact" : "WRONG"}`
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
