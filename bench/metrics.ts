/**
 * What the metrics cost validate (issue 30: metrics on ≥ 0.97 × metrics off, same run, on memory and
 * PostgreSQL). Per store, three bundled servers: "off" without `LM_METRICS_PORT`, "on" with it (both transports
 * count every request, `/metrics` is scraped every second during its runs, as Prometheus would, more often than
 * its usual 15 s), and "control", a second "off": control ÷ off is the noise floor of on ÷ off (two identical
 * servers, measured the same way). Two processes of one build differ by several % in throughput (JIT decisions,
 * memory layout), so `BENCH_METRICS_SERVERS` (4) sets of fresh servers are started in turn, each measured over
 * `BENCH_METRICS_ROUNDS` (3) rounds of one short run (`BENCH_METRICS_SECONDS`, 2 s) of POST /validate against
 * each server, the order rotating round by round so that a drift of the machine's load favours none. The figures
 * are the medians over all rounds of the ratios to "off", by throughput and by the servers' CPU time per response
 * (/proc), which depends less on what else runs than throughput does.
 *
 * Run: `nice -n 10 node bench/metrics.ts` (after `npx tsc -b`; about 3 min for both stores). Load: wrk `-t1 -c32`
 * when installed, else `load.ts` (autocannon). Settings: BENCH_METRICS_SERVERS, BENCH_METRICS_ROUNDS,
 * BENCH_METRICS_SECONDS, BENCH_CONNECTIONS (32), BENCH_WARMUP (1 s per server), BENCH_METRICS_CONFIGS (comma list
 * of memory, postgres; default both; postgres needs DATABASE_URL), BENCH_METRICS_CONTROL (0: no control server),
 * BENCH_METRICS_SCRAPE (0: the "on" server is not scraped during its runs), BENCH_METRICS_PROFILE (1: every server
 * runs under `--cpu-prof`, and a second table gives each one's main-thread CPU per response from its profile,
 * beside the part of it spent signing: the same native work on every server, so the ratio of the two is the
 * server's cost per response whatever the machine's speed was while it ran).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { readProfile, summarise } from "./profile.ts"
import { fixed, markdownTable, median, percentile } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  type Listening,
  lmBin,
  machineLine,
  metricsConfigs,
  postLoad,
  ready,
  serverStore,
  startListening,
  validateBodyOfNewLicense,
  wrkInstalled
} from "./support.ts"

const connections = envNumber("BENCH_CONNECTIONS", 32)
/** Fresh servers each set of rounds: two processes of the same build differ by several % (JIT, memory layout). */
const generations = envNumber("BENCH_METRICS_SERVERS", 4)
const rounds = envNumber("BENCH_METRICS_ROUNDS", 3)
const seconds = envNumber("BENCH_METRICS_SECONDS", 2)
const warmupSeconds = envNumber("BENCH_WARMUP", 1)
/** A third server, "off" like the first: its ratio to "off" is the noise floor of the on ÷ off figure. */
const control = envNumber("BENCH_METRICS_CONTROL", 1) !== 0
/** Whether the "on" server's `/metrics` is scraped every second during its runs. */
const scrape = envNumber("BENCH_METRICS_SCRAPE", 1) !== 0
/**
 * Whether every server's `GET /health` is asked every second during its runs, as a load balancer does. A server
 * that answers nothing but one request shape has V8 specialise Node's HTTP code to it; any other request (a
 * health check, a scrape on the second listener, another client) makes that code polymorphic, which costs
 * validate several % on its own (see bench/README.md): with it, "off" is not served more narrowly than "on".
 */
const health = envNumber("BENCH_METRICS_HEALTH", 1) !== 0
const profiled = envNumber("BENCH_METRICS_PROFILE", 0) !== 0
const profileDir = profiled ? fs.mkdtempSync(path.join(os.tmpdir(), "lm-bench-metrics-")) : ""
const databaseUrl = process.env.DATABASE_URL ?? ""
const configs = metricsConfigs()
const progress = (line: string) => process.stderr.write(`metrics: ${line}\n`)
const hasWrk = wrkInstalled()
const auth = bootstrapCredentials()

interface Server {
  readonly listening: Listening
  /**
   * Where its profiles go (with BENCH_METRICS_PROFILE); the responses of its measured runs (not the warm-up), and
   * when the first began and the last ended (µs, the monotonic clock of its profile's timestamps).
   */
  readonly profileDir?: string
  responses: number
  from: number
  to: number
  readonly url: string
  readonly body: string
  /** The metrics origin of an "on" server. */
  readonly metrics?: string
}

/** Starts a bundled server, creates one license on it and checks that validate answers `valid`. */
const startServer = async (env: NodeJS.ProcessEnv, name: string): Promise<Server> => {
  const dir = profiled ? path.join(profileDir, name) : undefined
  const profiling = dir === undefined ? {} : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=500` }
  const listening = await startListening([lmBin, "serve"], { ...env, ...profiling })
  try {
    await ready(listening.base)
    const body = await validateBodyOfNewLicense(listening.base, auth)
    const metrics = /Metrics on (http:\/\/[^\s"]+)\/metrics/.exec(listening.output())?.[1]
    return {
      listening,
      url: `${listening.base}/validate`,
      body,
      responses: 0,
      from: Number.POSITIVE_INFINITY,
      to: Number.NEGATIVE_INFINITY,
      ...(metrics === undefined ? {} : { metrics }),
      ...(dir === undefined ? {} : { profileDir: dir })
    }
  } catch (error) {
    await listening.stop(1_000)
    throw error
  }
}

/** CPU time a process has used so far (user + system), in µs; NaN when it is gone. */
const cpuMicrosOf = (pid: number): number => {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}

interface LoadRun {
  readonly rps: number
  readonly bad: number
  readonly cpuMicros: number
}

/**
 * `seconds` of POST /validate against `server`; every second its `/health` is asked (with `health`) and its
 * `/metrics` scraped (when it has one, with `scrape`).
 */
const load = async (server: Server, runSeconds: number, measured = true): Promise<LoadRun> => {
  const cpuBefore = cpuMicrosOf(server.listening.pid)
  const began = monotonicMicros()
  const scraper = setInterval(() => {
    if (health) void fetch(`${server.listening.base}/health`).then((r) => r.text()).catch(() => {})
    if (server.metrics !== undefined && scrape) void fetch(`${server.metrics}/metrics`).then((r) => r.text()).catch(() => {})
  }, 1000)
  try {
    const run = await postLoad({ url: server.url, body: server.body, seconds: runSeconds, connections })
    if (measured) {
      server.responses += run.responses
      server.from = Math.min(server.from, began)
      server.to = monotonicMicros()
    }
    return { rps: run.rps, bad: run.bad, cpuMicros: (cpuMicrosOf(server.listening.pid) - cpuBefore) / run.responses }
  } finally {
    clearInterval(scraper)
  }
}

/** The servers of a configuration: "off", "on", and with the control a second "off" (`control`). */
type Role = "off" | "on" | "control"

/** Microseconds on the monotonic clock, the clock of a profile's timestamps. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n)

/** From a stopped server's main-thread profile: its busy CPU and the part of it signing, µs per response. */
interface Profiled {
  readonly busy: number
  readonly sign: number
}

const profiledOf = (server: Server): Profiled => {
  const dir = server.profileDir!
  const file = fs.readdirSync(dir).find((f) => f.includes(`.${server.listening.pid}.0.`) && f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`no main-thread profile of pid ${server.listening.pid} in ${dir}`)
  // The samples of the measured runs only: not the start-up, the warm-up or the drain.
  const summary = summarise(readProfile(path.join(dir, file)), server.from, server.to)
  const sign = [...summary.selfByFunction].filter(([name]) => name.startsWith("signOneShot ")).reduce((n, [, micros]) => n + micros, 0)
  return { busy: summary.busyMicros / server.responses, sign: sign / server.responses }
}

const measure = async (name: string) => {
  const { cleanup, store } = await serverStore(name, databaseUrl, "metrics")
  const roles: Array<Role> = control ? ["off", "on", "control"] : ["off", "on"]
  const runs: Array<Record<Role, LoadRun>> = []
  const loads: Array<number> = []
  const profiles: Array<Record<Role, Profiled>> = []
  let counted = 0
  try {
    for (let g = 0; g < generations; g++) {
      const servers = new Map<Role, Server>()
      try {
        const start = async (role: Role) =>
          void servers.set(role, await startServer(bundledServerEnv(auth, store, role === "on" ? { LM_METRICS_PORT: "0" } : {}), `${name}-${g}-${role}`))
        // On PostgreSQL the very first one migrates the shared database, alone; then the others start together.
        if (g === 0) await start(roles[0]!)
        const started = await Promise.allSettled(roles.filter((role) => !servers.has(role)).map(start))
        for (const result of started) if (result.status === "rejected") throw result.reason
        const on = servers.get("on")!
        if (on.metrics === undefined) throw new Error(`the metrics server printed no "Metrics on" line:\n${on.listening.output()}`)
        progress(`${name} servers ${g + 1}: ${roles.map((role) => `${role} pid ${servers.get(role)!.listening.pid}`).join(", ")}; warming up`)
        for (const role of roles) await load(servers.get(role)!, warmupSeconds, false)
        for (let i = 0; i < rounds; i++) {
          // Each server goes first, second, … in turn, so that a drift of the machine's load favours none.
          const order = roles.map((_, k) => roles[(runs.length + k) % roles.length]!)
          const run = {} as Record<Role, LoadRun>
          for (const role of order) run[role] = await load(servers.get(role)!, seconds)
          runs.push(run)
          loads.push(os.loadavg()[0]!)
          progress(
            `${name} round ${runs.length}: ${roles.map((role) => `${role} ${fixed(run[role].rps)} req/s ${fixed(run[role].cpuMicros)} µs CPU`).join(", ")}; on ÷ off ${
              fixed(run.on.rps / run.off.rps, 3)
            }${control ? `, control ÷ off ${fixed(run.control.rps / run.off.rps, 3)}` : ""} (load ${loads.at(-1)!.toFixed(2)})`
          )
        }
        const scraped = await (await fetch(`${on.metrics}/metrics`)).text()
        counted += [...scraped.matchAll(/^lm_http_requests_total\{route="[^"]*\/validate",method="POST",status="200"\} (\d+)/gm)]
          .reduce((n, m) => n + Number(m[1]), 0)
      } finally {
        // Together: each waits out its drain grace.
        await Promise.all([...servers.values()].map((server) => server.listening.stop()))
      }
      if (profiled) profiles.push(Object.fromEntries(roles.map((role) => [role, profiledOf(servers.get(role)!)])) as Record<Role, Profiled>)
    }
    progress(`${name}: the on servers counted ${counted} validations answered 200`)
    const storeName = name === "memory" ? "memory" : "PostgreSQL"
    /** A row of the table: `role` against "off", by throughput and by the server's CPU per response. */
    const row = (role: Role) => {
      const ratios = runs.map((r) => r[role].rps / r.off.rps).sort((a, b) => a - b)
      return [
        `${storeName}: ${role === "on" ? "on ÷ off" : "control: off ÷ off"}`,
        fixed(median(runs.map((r) => r.off.rps))),
        fixed(median(runs.map((r) => r[role].rps))),
        `**${fixed(median(ratios), 3)}**`,
        `${fixed(percentile(ratios, 25), 2)}–${fixed(percentile(ratios, 75), 2)}`,
        `${ratios.filter((r) => r >= 0.97).length} of ${ratios.length}`,
        `${fixed(median(runs.map((r) => r.off.cpuMicros)), 1)} / ${fixed(median(runs.map((r) => r[role].cpuMicros)), 1)}`,
        `**${fixed(median(runs.map((r) => r.off.cpuMicros / r[role].cpuMicros)), 3)}**`,
        String(runs.reduce((n, r) => n + r.off.bad + r[role].bad, 0)),
        `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`
      ]
    }
    /** A row of the profile table: `role` against "off", by main-thread CPU per response, and per signing µs. */
    const profileRow = (role: Role) => {
      const perSign = (p: Profiled) => p.busy / p.sign
      return [
        `${storeName}: ${role === "on" ? "on ÷ off" : "control: off ÷ off"}`,
        `${fixed(median(profiles.map((p) => p.off.busy)), 1)} / ${fixed(median(profiles.map((p) => p[role].busy)), 1)}`,
        `${fixed(median(profiles.map((p) => p.off.sign)), 1)} / ${fixed(median(profiles.map((p) => p[role].sign)), 1)}`,
        fixed(median(profiles.map((p) => p.off.busy / p[role].busy)), 3),
        `**${fixed(median(profiles.map((p) => perSign(p.off) / perSign(p[role]))), 3)}**`,
        profiles.map((p) => fixed(perSign(p.off) / perSign(p[role]), 3)).join(", ")
      ]
    }
    const roleRows = control ? ["on", "control"] as const : ["on"] as const
    return { rows: roleRows.map(row), profileRows: profiled ? roleRows.map(profileRow) : [] }
  } finally {
    await cleanup()
  }
}

const rows: Array<Array<string>> = []
const profileRows: Array<Array<string>> = []
for (const name of configs) {
  if (name === "postgres" && databaseUrl === "") {
    progress("postgres: skipped (no DATABASE_URL)")
    continue
  }
  const measured = await measure(name)
  rows.push(...measured.rows)
  profileRows.push(...measured.profileRows)
}
process.stdout.write(
  `${machineLine()}\nwrk -t1 -c${connections} (${hasWrk ? "wrk" : "autocannon"}), ${generations} sets of servers × ${rounds} rounds of ${seconds} s per server, POST /validate; ` +
    `/metrics ${scrape ? "scraped every second" : "not scraped"}; /health ${health ? "asked every second on every server" : "not asked"}\n\n`
)
process.stdout.write(
  markdownTable(
    [
      "store: ratio",
      "off (req/s, median)",
      "on / control (req/s, median)",
      "÷ off (median of rounds)",
      "middle half of rounds",
      "rounds ≥ 0.97",
      "server CPU µs per response off / on or control",
      "CPU off ÷ on or control (median of rounds)",
      "non-2xx / errors",
      "load average (1 min)"
    ],
    rows
  ) + "\n"
)
if (profiled) {
  process.stdout.write(
    "\nMain-thread CPU per response from each server's profile (`--cpu-prof`, 500 µs samples, during its measured runs), " +
      "and the part of it in `signOneShot`: one Ed25519 signature per validate on every server, so busy ÷ sign is a server's " +
      "cost per response in units of the machine's speed while it ran. Medians over the sets of servers.\n\n" +
      markdownTable(
        [
          "store: ratio",
          "busy µs per response off / on or control",
          "signing µs per response off / on or control",
          "busy off ÷ on or control",
          "(busy ÷ sign) off ÷ on or control",
          "each set"
        ],
        profileRows
      ) + "\n"
  )
  fs.rmSync(profileDir, { recursive: true, force: true })
}
