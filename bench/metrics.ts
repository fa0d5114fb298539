/**
 * What the metrics cost validate (issue 30: metrics on ≥ 0.97 × metrics off, same run, on memory and
 * PostgreSQL). Per store, two bundled servers are started once: one without `LM_METRICS_PORT` ("off"), one with it
 * ("on": both transports count every request, `/metrics` is scraped every second during its runs, as Prometheus
 * would, more often than its usual 15 s). Then `BENCH_METRICS_ROUNDS` (12) pairs of short runs
 * (`BENCH_METRICS_SECONDS`, 3 s) of POST /validate, one against each server, the order alternating pair by pair so
 * that a drift of the machine's load favours neither; the figure is the median of the pairs' on ÷ off, with the
 * servers' CPU time per response (/proc), which depends less on what else runs than throughput does.
 *
 * Run: `nice -n 10 node bench/metrics.ts` (after `npx tsc -b`). Load: wrk `-t1 -c32` when installed, else
 * `load.ts` (autocannon). Settings: BENCH_METRICS_ROUNDS, BENCH_METRICS_SECONDS, BENCH_CONNECTIONS (32),
 * BENCH_WARMUP (5 s per server), BENCH_METRICS_CONFIGS (comma list of memory, postgres; default both; postgres
 * needs DATABASE_URL).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import { fixed, markdownTable, median, percentile } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  type Listening,
  lmBin,
  machineLine,
  ready,
  postLoad,
  startListening,
  wrkInstalled
} from "./support.ts"

const connections = envNumber("BENCH_CONNECTIONS", 32)
const rounds = envNumber("BENCH_METRICS_ROUNDS", 12)
const seconds = envNumber("BENCH_METRICS_SECONDS", 3)
const warmupSeconds = envNumber("BENCH_WARMUP", 5)
const databaseUrl = process.env.DATABASE_URL ?? ""
const configs = (process.env.BENCH_METRICS_CONFIGS ?? "memory,postgres").split(",").map((c) => c.trim())
const progress = (line: string) => process.stderr.write(`metrics: ${line}\n`)
const hasWrk = wrkInstalled()
const auth = bootstrapCredentials()

interface Server {
  readonly listening: Listening
  readonly url: string
  readonly body: string
  /** The metrics origin of an "on" server. */
  readonly metrics?: string
}

/** Starts a bundled server, creates one license on it and checks that validate answers `valid`. */
const startServer = async (env: NodeJS.ProcessEnv): Promise<Server> => {
  const listening = await startListening([lmBin, "serve"], env)
  try {
    await ready(listening.base)
    const key = (await expectStatus(201, listening.base, "POST", "/licenses", {}, auth)).body.data.license_key as string
    const answer = await expectStatus(200, listening.base, "POST", "/validate", { license_key: key })
    if (answer.body.data.valid !== true) throw new Error(`validate of a new license is not valid: ${JSON.stringify(answer.body)}`)
    const metrics = /Metrics on (http:\/\/[^\s"]+)\/metrics/.exec(listening.output())?.[1]
    return { listening, url: `${listening.base}/validate`, body: JSON.stringify({ license_key: key }), ...(metrics === undefined ? {} : { metrics }) }
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

/** `seconds` of POST /validate against `server` (scraping its `/metrics` every second when it has one). */
const load = async (server: Server, runSeconds: number): Promise<LoadRun> => {
  const cpuBefore = cpuMicrosOf(server.listening.pid)
  const scraper = server.metrics === undefined
    ? undefined
    : setInterval(() => void fetch(`${server.metrics}/metrics`).then((r) => r.text()).catch(() => {}), 1000)
  try {
    const run = await postLoad({ url: server.url, body: server.body, seconds: runSeconds, connections })
    return { rps: run.rps, bad: run.bad, cpuMicros: (cpuMicrosOf(server.listening.pid) - cpuBefore) / run.responses }
  } finally {
    clearInterval(scraper)
  }
}

/** The store settings of a configuration's two servers, and what to remove after. */
const openStore = async (name: string) => {
  if (name === "memory") return { store: { LM_STORAGE: "memory" }, cleanup: async () => {} }
  const database = await freshPostgresDatabase(databaseUrl, "metrics")
  return { store: { DATABASE_URL: database.url }, cleanup: database.drop }
}

const measure = async (name: string) => {
  const { cleanup, store } = await openStore(name)
  const servers: Array<Server> = []
  try {
    // One after the other: on PostgreSQL the first one migrates the shared database.
    const off = await startServer(bundledServerEnv(auth, store))
    servers.push(off)
    const on = await startServer(bundledServerEnv(auth, store, { LM_METRICS_PORT: "0" }))
    servers.push(on)
    if (on.metrics === undefined) throw new Error(`the metrics server printed no "Metrics on" line:\n${on.listening.output()}`)
    progress(`${name}: off pid ${off.listening.pid}, on pid ${on.listening.pid}; warming up`)
    await load(off, warmupSeconds)
    await load(on, warmupSeconds)
    const pairs: Array<{ off: LoadRun; on: LoadRun }> = []
    const loads: Array<number> = []
    for (let i = 0; i < rounds; i++) {
      const first = i % 2 === 0 ? off : on
      const a = await load(first, seconds)
      const b = await load(first === off ? on : off, seconds)
      const pair = first === off ? { off: a, on: b } : { off: b, on: a }
      pairs.push(pair)
      loads.push(os.loadavg()[0]!)
      progress(
        `${name} pair ${i + 1}: off ${fixed(pair.off.rps)} req/s, on ${fixed(pair.on.rps)} req/s, on ÷ off ${
          fixed(pair.on.rps / pair.off.rps, 3)
        }; CPU µs per response off ${fixed(pair.off.cpuMicros)}, on ${fixed(pair.on.cpuMicros)} (load ${loads.at(-1)!.toFixed(2)})`
      )
    }
    const scraped = await (await fetch(`${on.metrics}/metrics`)).text()
    const counted = [...scraped.matchAll(/^lm_http_requests_total\{route="[^"]*\/validate",method="POST",status="200"\} (\d+)/gm)]
      .reduce((n, m) => n + Number(m[1]), 0)
    progress(`${name}: the on server counted ${counted} validations answered 200`)
    const ratios = pairs.map((p) => p.on.rps / p.off.rps).sort((a, b) => a - b)
    return [
      name === "memory" ? "memory" : "PostgreSQL",
      fixed(median(pairs.map((p) => p.off.rps))),
      fixed(median(pairs.map((p) => p.on.rps))),
      `**${fixed(median(ratios), 3)}**`,
      `${fixed(percentile(ratios, 25), 2)}–${fixed(percentile(ratios, 75), 2)}`,
      `${ratios.filter((r) => r >= 0.97).length} of ${ratios.length}`,
      `${fixed(median(pairs.map((p) => p.off.cpuMicros)))} / ${fixed(median(pairs.map((p) => p.on.cpuMicros)))}`,
      `**${fixed(median(pairs.map((p) => p.off.cpuMicros / p.on.cpuMicros)), 3)}**`,
      String(pairs.reduce((n, p) => n + p.off.bad + p.on.bad, 0)),
      `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`
    ]
  } finally {
    for (const server of servers) await server.listening.stop()
    await cleanup()
  }
}

const rows: Array<Array<string>> = []
for (const name of configs) {
  if (name === "postgres" && databaseUrl === "") {
    progress("postgres: skipped (no DATABASE_URL)")
    continue
  }
  rows.push(await measure(name))
}
process.stdout.write(`${machineLine()}\nwrk -t1 -c${connections} (${hasWrk ? "wrk" : "autocannon"}), ${rounds} pairs of ${seconds} s, POST /validate\n\n`)
process.stdout.write(
  markdownTable(
    ["store", "off (req/s, median)", "on (req/s, median)", "on ÷ off (median of pairs)", "middle half of pairs", "pairs ≥ 0.97", "server CPU µs per response off / on", "CPU off ÷ on (median of pairs)", "non-2xx / errors", "load average (1 min)"],
    rows
  ) + "\n"
)
