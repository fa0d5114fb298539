/**
 * `npm run bench -- --quick`: the figures of issue 32 in a few minutes, with wrk (`wrk.ts`: a compiled load
 * generator, one thread, `BENCH_CONNECTIONS` connections; installed with apt-get when missing).
 *
 * The floor (`floor.ts`) starts and stays up. For each store — memory, PGlite (a fresh copy of the template
 * folder), PostgreSQL (a fresh database on the server of `DATABASE_URL`, dropped after; skipped without it) —
 * `lm serve` (the built server) starts with rate limits on and the event log on, and each scenario runs as: a
 * warm-up of the server and of the floor, then `BENCH_RUNS` pairs, each a run against the server followed at once
 * by the same run against the floor; the ratio is the median of the pairs' server ÷ floor. Rate limits are on as
 * by default (`LM_RATE_LIMIT=on`) but with limits one address cannot reach (`limitsOn` of support.ts: the
 * default 120 a minute per IP would refuse a load from one address after a few milliseconds), so every request
 * pays for its buckets and none is refused.
 *
 * Scenarios:
 * - `validate` (every store): POST /validate `{license_key}`, one of 64 licenses after the other (each with one
 *   machine active);
 * - `activate+deactivate` (PGlite, PostgreSQL): cycles on one license with one seat per connection, driven by
 *   the answers (see `cycleScript` in wrk.ts); the figure is cycles per second (answered deactivations). After
 *   each run against the server (the warm-up included) the seat check reads the license: its
 *   `activation_count` must equal the machines it lists active, stay within its seats, and the active machines
 *   must be exactly what the load generator left holding a seat, give or take the requests in flight when it
 *   stopped; then every active machine is deactivated and the count must be 0 before the next run.
 *
 * Prints the date, the command, the machine and its load average at the start and the end, then one table
 * (server and floor throughput, each pair's ratio, the median ratio, each side's p99 (wrk's latency of every
 * response), the seat checks) to stdout, progress to stderr; writes it to bench/results/quick.md (not
 * committed). Nothing is asserted: the figures are read (the target column says whether issue 32's target is
 * met).
 *
 * Settings (environment): BENCH_WARMUP (seconds per side, default 2), BENCH_DURATION (seconds per run, default
 * 3), BENCH_RUNS (pairs, default 5), BENCH_CONNECTIONS (default 64), BENCH_CONFIGS (comma list of memory,
 * pglite, postgres; default all three), BENCH_SCENARIOS (validate, activate+deactivate; default both),
 * DATABASE_URL (enables PostgreSQL).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  childEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  limitsOn,
  type Listening,
  lmBin,
  loadAverage,
  machineLine,
  pgliteDataDir,
  ready,
  repoRoot,
  seedValidateKeys,
  startListening
} from "./support.ts"
import { cycleScript, ensureWrk, runWrk, validateScript, type WrkRun } from "./wrk.ts"

const settings = {
  warmup: envNumber("BENCH_WARMUP", 2),
  duration: envNumber("BENCH_DURATION", 3),
  pairs: envNumber("BENCH_RUNS", 5),
  connections: envNumber("BENCH_CONNECTIONS", 64),
  configs: (process.env.BENCH_CONFIGS ?? "memory,pglite,postgres").split(",").map((c) => c.trim()).filter((c) => c !== ""),
  scenarios: (process.env.BENCH_SCENARIOS ?? "validate,activate+deactivate").split(",").map((c) => c.trim()),
  databaseUrl: process.env.DATABASE_URL ?? ""
}

const clock = performance.now()
const progress = (line: string) => process.stderr.write(`bench [${((performance.now() - clock) / 1000).toFixed(0)} s]: ${line}\n`)

type Scenario = "validate" | "activate+deactivate"

/** Issue 32's targets: validate ≥ 0.85 × the floor (p99 ≤ 1.5 × the floor's), cycles ≥ 0.6 × the floor's. */
const targets: Record<Scenario, number> = { validate: 0.85, "activate+deactivate": 0.6 }
const p99Target = 1.5

/** Licenses validated: one after the other over every connection. */
const validateCount = 64
/** Fingerprints each cycle run takes from (more than the connections: a fingerprint waits for its answer). */
const fingerprintPool = 2 * settings.connections

/** The seat check of one run against the server. */
interface SeatCheck {
  /** `activation_count` right after the run, the machines listed active, the ceiling. */
  readonly held: number
  readonly listed: number
  readonly ceiling: number
  /** Fingerprints the load generator left holding a seat, and those in flight (may or may not hold one). */
  readonly sure: number
  readonly inFlight: number
  /** Active machines the load generator cannot account for, and sure ones not active. */
  readonly unexpected: ReadonlyArray<string>
  readonly missing: ReadonlyArray<string>
  /** `activation_count` after deactivating every active machine (must be 0). */
  readonly afterCleanup: number
  readonly exact: boolean
}

/** One pair: the server's run, then the floor's. */
interface Pair {
  readonly server: WrkRun
  readonly floor: WrkRun
  readonly seats?: SeatCheck
  readonly load: number
}

interface Row {
  readonly store: string
  readonly scenario: Scenario
  readonly pairs: ReadonlyArray<Pair>
}

/** Throughput as the scenario counts it: responses per second, or cycles (answered deactivations) per second. */
const rate = (scenario: Scenario, run: WrkRun) =>
  scenario === "validate" ? run.rps : (run.counts?.deactivated ?? Number.NaN) / run.seconds

const auth = bootstrapCredentials()

/** A started server and its store's clean-up. */
interface Started {
  readonly listening: Listening
  readonly cleanup: () => Promise<void>
}

const serve = async (store: Record<string, string>, cleanup: () => Promise<void>): Promise<Started> => {
  try {
    return { listening: await startListening([lmBin, "serve"], bundledServerEnv(auth, store, limitsOn)), cleanup }
  } catch (error) {
    await cleanup()
    throw error
  }
}

const starters: Record<string, () => Promise<Started>> = {
  memory: () => serve({ LM_STORAGE: "memory" }, async () => {}),
  pglite: async () => {
    const data = await pgliteDataDir()
    return serve({ LM_DATA_DIR: data.dir }, data.remove)
  },
  postgres: async () => {
    const database = await freshPostgresDatabase(settings.databaseUrl, "quick")
    return serve({ DATABASE_URL: database.url }, database.drop)
  }
}

const scenariosOf: Record<string, ReadonlyArray<Scenario>> = {
  memory: ["validate"],
  pglite: ["validate", "activate+deactivate"],
  postgres: ["validate", "activate+deactivate"]
}

/** The active machines of a license and its counts. */
const readSeats = async (base: string, key: string) => {
  const { body } = await expectStatus(200, base, "GET", `/licenses/${encodeURIComponent(key)}`, undefined, auth)
  const machines = body.data.machines as ReadonlyArray<{ readonly status: string; readonly fingerprint: string }>
  return {
    held: body.data.activation_count as number,
    ceiling: body.data.max_activations as number,
    active: machines.filter((m) => m.status === "active").map((m) => m.fingerprint).sort()
  }
}

/**
 * The seats of the cycle license once the requests still in flight when wrk stopped are done (two reads 100 ms
 * apart that agree), checked against what the load generator knows (see {@link SeatCheck}); then every active
 * machine is deactivated and the license read again.
 */
const checkSeats = async (base: string, key: string, run: WrkRun): Promise<SeatCheck> => {
  let seats = await readSeats(base, key)
  for (let attempt = 0; attempt < 50; attempt++) {
    await new Promise((r) => setTimeout(r, 100))
    const again = await readSeats(base, key)
    const settled = again.held === seats.held && again.active.join() === seats.active.join()
    seats = again
    if (settled) break
  }
  const state = run.state ?? {}
  const sure = Object.keys(state).filter((fp) => state[fp] === "active")
  const inFlight = Object.keys(state).filter((fp) => state[fp] !== "active")
  const active = new Set(seats.active)
  const missing = sure.filter((fp) => !active.has(fp))
  const unexpected = seats.active.filter((fp) => state[fp] === undefined)
  for (const fingerprint of seats.active) {
    await expectStatus(200, base, "POST", "/deactivate", { license_key: key, fingerprint })
  }
  const after = await readSeats(base, key)
  const afterCleanup = after.held + after.active.length
  return {
    held: seats.held,
    listed: seats.active.length,
    ceiling: seats.ceiling,
    sure: sure.length,
    inFlight: inFlight.length,
    unexpected,
    missing,
    afterCleanup,
    exact: seats.held === seats.active.length && seats.held <= seats.ceiling && missing.length === 0 && unexpected.length === 0 &&
      afterCleanup === 0
  }
}

const describeRun = (scenario: Scenario, run: WrkRun) =>
  `${fixed(run.rps)} req/s${scenario === "validate" ? "" : ` (${fixed(rate(scenario, run))} cycles/s)`}, p99 ${fixed(run.p99, 1)} ms${
    run.non2xx + run.errors > 0 ? `, non-2xx ${run.non2xx}, errors ${run.errors}` : ""
  }`

const describeSeats = (s: SeatCheck) =>
  `seats: ${s.held} held, ${s.listed} listed active (ceiling ${s.ceiling}); load generator: ${s.sure} holding, ${s.inFlight} in flight${
    s.missing.length > 0 ? `; NOT ACTIVE: ${s.missing.join(" ")}` : ""
  }${s.unexpected.length > 0 ? `; UNEXPECTED: ${s.unexpected.join(" ")}` : ""}; after clean-up ${s.afterCleanup} — ${s.exact ? "exact" : "WRONG"}`

/** The warm-up and the pairs of one scenario on one server. */
const measure = async (store: string, scenario: Scenario, server: Listening, floor: Listening, keys: ReadonlyArray<string>, cycleKey: string) => {
  const common = { connections: settings.connections }
  const runOn = (listening: Listening, seconds: number, floorSide: boolean) => {
    const apiPath = new URL(listening.base).pathname
    return scenario === "validate"
      ? runWrk({ ...common, url: listening.base, seconds, script: validateScript, args: [apiPath, ...(floorSide ? floorKeys : keys)] })
      : runWrk({ ...common, url: listening.base, seconds, script: cycleScript, args: [apiPath, floorSide ? "BNCH-FLOR-CYCL-0000" : cycleKey, String(fingerprintPool)] })
  }
  const serverRun = async (seconds: number) => {
    const run = await runOn(server, seconds, false)
    const seats = scenario === "validate" ? undefined : await checkSeats(server.base, cycleKey, run)
    return { run, seats }
  }
  const warm = await serverRun(settings.warmup)
  progress(`  warm-up: ${describeRun(scenario, warm.run)}${warm.seats === undefined ? "" : `; ${describeSeats(warm.seats)}`}`)
  const floorWarm = await runOn(floor, settings.warmup, true)
  progress(`  floor warm-up: ${describeRun(scenario, floorWarm)}`)
  const pairs: Array<Pair> = []
  for (let i = 1; i <= settings.pairs; i++) {
    const { run, seats } = await serverRun(settings.duration)
    const floorRun = await runOn(floor, settings.duration, true)
    const pair: Pair = { server: run, floor: floorRun, load: os.loadavg()[0]!, ...(seats === undefined ? {} : { seats }) }
    pairs.push(pair)
    progress(
      `  pair ${i}: ${describeRun(scenario, run)}; floor ${describeRun(scenario, floorRun)}; × floor ${
        fixed(rate(scenario, run) / rate(scenario, floorRun), 2)
      } (load ${pair.load.toFixed(2)})${seats === undefined ? "" : `\n    ${describeSeats(seats)}`}`
    )
  }
  return { store, scenario, pairs } satisfies Row
}

/** Keys of the right format for the floor, which keeps no state. */
const floorKeys = Array.from({ length: validateCount }, (_, i) => `BNCH-FLOR-0000-${String(i).padStart(4, "0")}`)

const benchStore = async (store: string, floor: Listening): Promise<Array<Row>> => {
  const wanted = scenariosOf[store]!.filter((s) => settings.scenarios.includes(s))
  if (wanted.length === 0) return []
  progress(`${store}: starting`)
  const { listening, cleanup } = await starters[store]!()
  const rows: Array<Row> = []
  try {
    await ready(listening.base)
    const keys = await seedValidateKeys(listening.base, auth, validateCount)
    const cycleKey = (await expectStatus(201, listening.base, "POST", "/licenses", { max_activations: settings.connections }, auth)).body.data
      .license_key as string
    progress(`${store}: listening at ${listening.base}, pid ${listening.pid}, seeded`)
    for (const scenario of wanted) {
      progress(`${store}: ${scenario}`)
      rows.push(await measure(store, scenario, listening, floor, keys, cycleKey))
    }
  } catch (error) {
    // What the server logged (its 500s' causes) goes with the failure.
    const logged = listening.output().split("\n").slice(-40).join("\n")
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- the server's last lines ---\n${logged}`)
  } finally {
    await listening.stop()
    await cleanup()
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------------

const started = new Date()
const loadAtStart = loadAverage()
const settingNames = ["BENCH_WARMUP", "BENCH_DURATION", "BENCH_RUNS", "BENCH_CONNECTIONS", "BENCH_CONFIGS", "BENCH_SCENARIOS"]
const command = [
  ...(settings.databaseUrl === "" ? [] : ["DATABASE_URL=…"]),
  ...settingNames.filter((n) => process.env[n] !== undefined).map((n) => `${n}=${process.env[n]}`),
  "npm run bench -- --quick"
].join(" ")
progress(`${started.toISOString()}: ${command}; load average ${loadAtStart}`)
progress(machineLine())
ensureWrk(progress)

const rows: Array<Row> = []
const skipped: Array<string> = []
for (const store of settings.configs) {
  if (starters[store] === undefined) throw new Error(`BENCH_CONFIGS: unknown store ${store} (memory, pglite, postgres)`)
}
const floor = await startListening([path.join(repoRoot, "bench/floor.ts")], childEnv({ PORT: "0", HOST: "127.0.0.1" }))
progress(`floor: listening at ${floor.base}, pid ${floor.pid}`)
try {
  for (const store of settings.configs) {
    if (store === "postgres" && settings.databaseUrl === "") {
      skipped.push("postgres (DATABASE_URL is not set)")
      continue
    }
    try {
      rows.push(...(await benchStore(store, floor)))
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      progress(`${store}: FAILED: ${message}`)
      skipped.push(`${store} (failed: ${message.split("\n")[0]})`)
    }
  }
} finally {
  await floor.stop()
}

// ---------------------------------------------------------------------------------------------------------------

const ended = new Date()
const storeNames: Record<string, string> = { memory: "memory", pglite: "PGlite", postgres: "PostgreSQL" }
const table = markdownTable(
  [
    "store",
    "scenario",
    "server (median)",
    "floor (median)",
    "× floor, each pair",
    "× floor (median)",
    "p99 ms server (worst)",
    "p99 ms floor (worst)",
    "p99 ÷ floor's",
    "non-2xx / errors (server)",
    "seat checks",
    "issue 32 target",
    "load average (1 min)"
  ],
  rows.map((row) => {
    const ratios = row.pairs.map((p) => rate(row.scenario, p.server) / rate(row.scenario, p.floor))
    const ratio = median(ratios)
    const unit = row.scenario === "validate" ? "req/s" : "cycles/s"
    const serverP99 = median(row.pairs.map((p) => p.server.p99))
    const floorP99 = median(row.pairs.map((p) => p.floor.p99))
    const p99Ratio = serverP99 / floorP99
    const checks = row.pairs.filter((p) => p.seats !== undefined)
    const meets = row.scenario === "validate"
      ? `≥ ${targets.validate}, p99 ≤ ${p99Target}×: ${ratio >= targets.validate && p99Ratio <= p99Target ? "met" : "not met"}`
      : `≥ ${targets[row.scenario]}: ${ratio >= targets[row.scenario] ? "met" : "not met"}`
    const loads = row.pairs.map((p) => p.load)
    return [
      storeNames[row.store] ?? row.store,
      row.scenario,
      `${fixed(median(row.pairs.map((p) => rate(row.scenario, p.server))))} ${unit}`,
      `${fixed(median(row.pairs.map((p) => rate(row.scenario, p.floor))))} ${unit}`,
      ratios.map((r) => fixed(r, 2)).join(", "),
      `**${fixed(ratio, 2)}**`,
      `${fixed(serverP99, 1)} (${fixed(Math.max(...row.pairs.map((p) => p.server.p99)), 1)})`,
      `${fixed(floorP99, 1)} (${fixed(Math.max(...row.pairs.map((p) => p.floor.p99)), 1)})`,
      fixed(p99Ratio, 2),
      `${row.pairs.reduce((n, p) => n + p.server.non2xx, 0)} / ${row.pairs.reduce((n, p) => n + p.server.errors, 0)}`,
      checks.length === 0 ? "–" : `${checks.filter((p) => p.seats!.exact).length} of ${checks.length} exact`,
      meets,
      `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`
    ]
  })
)

const report = [
  `## Quick bench of ${started.toISOString()} (${Math.round((ended.getTime() - started.getTime()) / 1000)} s)`,
  "",
  `Command: \`${command}\`; ${machineLine()}; load average ${loadAtStart} at the start, ${loadAverage()} at the end (${ended.toISOString()}).`,
  `wrk -t1 -c${settings.connections}; warm-up ${settings.warmup} s per side, ${settings.pairs} pairs of ${settings.duration} s (server run, then floor run); rate limits on (limits no load reaches), event log on.`,
  "",
  table,
  "",
  ...(skipped.length > 0 ? [`Not measured: ${skipped.join("; ")}.`, ""] : [])
].join("\n")

console.log(report)
const results = path.join(repoRoot, "bench/results")
fs.mkdirSync(results, { recursive: true })
fs.writeFileSync(path.join(results, "quick.md"), `${report}\n`)
fs.writeFileSync(path.join(results, "quick.json"), `${JSON.stringify({ started, ended, command, loadAtStart, loadAtEnd: loadAverage(), settings: { ...settings, databaseUrl: settings.databaseUrl !== "" }, rows, skipped }, null, 2)}\n`)
progress("written: bench/results/quick.md and quick.json")
