/**
 * What the metrics cost validate, counted in machine instructions (issue 30: metrics on ≥ 0.97 × off). The
 * throughput of `bench/metrics.ts` moves by ±10 % from one 2-second run to the next on a shared two-core machine,
 * and its control (two identical servers) strays 3–7 % from 1 over a whole run: a 3 % effect is below what it can
 * show there. An instruction count is not: it does not depend on what else the machine runs.
 *
 * Per store, three bundled servers under valgrind's callgrind (`--separate-threads=yes`): "off" without
 * `LM_METRICS_PORT`, "on" with it, and "control", a second "off" whose ratio to "off" is the noise of the figure.
 * V8 runs them with `--single-threaded` (compilation and GC on the main thread, not on helper threads whose work
 * lands in whichever window it happens to fall) and `--no-memory-reducer` (which, 50 times slower under valgrind,
 * would see an idle process and start full collections that a server under load never makes). Each is warmed up
 * with `BENCH_COUNT_WARMUP` (5,000) validates, then its counters are zeroed, it answers `BENCH_COUNT_RESPONSES`
 * (5,000) more and they are dumped: `BENCH_COUNT_ROUNDS` (2) times. Throughout, every `BENCH_COUNT_EVERY` (1,000)
 * responses each server is asked `GET /health` and the "on" server's `/metrics` is scraped: at the throughput of
 * `bench/metrics.ts` here (~4,000 validates a second) four scrapes a second, where Prometheus makes one every 15 s.
 * Timers count more than they would: the servers run ~50 times slower, so a periodic job (the event-loop delay
 * monitor, the event log's flush) comes ~50 times as often per response.
 *
 * The figures are instructions per response of every thread of the process, split in two. The lumps: V8's
 * optimising compilers (TurboFan, Maglev) and its full collections (mark-compact and the incremental marking before
 * it), each hundreds of millions of instructions that fall in one window or the next, whichever server it is (a
 * full collection is ~10 % of a 5,000-response window that holds one); a server under a steady validate load makes
 * none (`node --trace-gc`: no mark-compact in 20 s of wrk, metrics on or off). The steady work: all the rest, the
 * requests, the young-generation collections their garbage needs, the timers, the metrics thread. Off ÷ on of the
 * steady work is the headline: the throughput ratio the instructions allow.
 *
 * Run: `DATABASE_URL=… node bench/metrics-instructions.ts` (after `npm run build`; valgrind installed; about 20 min
 * for both stores, the three servers of a store at once; the figures do not depend on what else the machine runs).
 * Settings: BENCH_COUNT_WARMUP, BENCH_COUNT_RESPONSES, BENCH_COUNT_ROUNDS, BENCH_COUNT_EVERY, BENCH_CONNECTIONS (8),
 * BENCH_METRICS_CONFIGS (memory,postgres).
 */
import { execFile, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { fixed, markdownTable } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  type Listening,
  lmBin,
  loadAverage,
  machineLine,
  metricsConfigs,
  ready,
  requireBundle,
  serverStore,
  startListening,
  validateBodyOfNewLicense
} from "./support.ts"

const warmup = envNumber("BENCH_COUNT_WARMUP", 5_000)
const responses = envNumber("BENCH_COUNT_RESPONSES", 5_000)
const rounds = envNumber("BENCH_COUNT_ROUNDS", 2)
const every = envNumber("BENCH_COUNT_EVERY", 1_000)
const connections = envNumber("BENCH_CONNECTIONS", 8)
const databaseUrl = process.env.DATABASE_URL ?? ""
const configs = metricsConfigs()
const progress = (line: string) => process.stderr.write(`metrics-instructions: ${line}\n`)
const auth = bootstrapCredentials()

if (spawnSync("valgrind", ["--version"]).error !== undefined) {
  throw new Error("valgrind is not installed (apt-get install valgrind)")
}
requireBundle()
const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "lm-bench-callgrind-"))

/** V8 made to do its work where and when the load asks for it (see above). */
const v8Flags = ["--single-threaded", "--no-memory-reducer"]

type Role = "off" | "on" | "control"
const roles: ReadonlyArray<Role> = ["off", "on", "control"]

interface Server {
  readonly role: Role
  readonly listening: Listening
  readonly env: NodeJS.ProcessEnv
  readonly prefix: string
  readonly validate: string
  readonly body: string
  readonly metrics?: string
  answered: number
  bad: number
  /** Requests whose connection was reset before an answer (a kept-alive socket the server closed), sent again. */
  resets: number
}

/** Instructions per response of one dump of a server: every thread's, and the lumps among them (see above). */
interface Counted {
  readonly all: number
  readonly lumps: number
}

/**
 * The functions whose inclusive instructions are the lumps: the optimising compilers' jobs, the full collection's
 * atomic pause and its incremental marking steps (disjoint call trees: neither calls another).
 */
const lumpFunctions = [
  "v8::internal::compiler::PipelineCompilationJob::ExecuteJobImpl",
  "v8::internal::maglev::MaglevCompilationJob::ExecuteJobImpl",
  "v8::internal::MarkCompactCollector::CollectGarbage",
  "v8::internal::IncrementalMarking::Step"
]

const startServer = async (role: Role, store: Record<string, string>, name: string): Promise<Server> => {
  const env = bundledServerEnv(auth, store, role === "on" ? { LM_METRICS_PORT: "0" } : {})
  const prefix = path.join(outDir, `${name}-${role}`)
  const valgrind = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--dump-instr=no", `--callgrind-out-file=${prefix}.%p`]
  // Node under valgrind starts in a minute or two (three at once on two cores).
  const listening = await startListening([...v8Flags, lmBin, "serve"], env, 600_000, valgrind)
  try {
    await ready(listening.base)
    const body = await validateBodyOfNewLicense(listening.base, auth)
    const metrics = /Metrics on (http:\/\/[^\s"]+)\/metrics/.exec(listening.output())?.[1]
    if (role === "on" && metrics === undefined) throw new Error(`the metrics server printed no "Metrics on" line:\n${listening.output()}`)
    return { role, listening, env, prefix, validate: `${listening.base}/validate`, body, answered: 0, bad: 0, resets: 0, ...(metrics === undefined ? {} : { metrics }) }
  } catch (error) {
    await listening.stop(1_000)
    throw error
  }
}

/** Asks callgrind in the server's process (`-z` zero the counters, `-d` dump them); its vgdb files are named by the server's USER and HOST. */
const callgrind = (server: Server, command: "-z" | "-d") =>
  promisify(execFile)("callgrind_control", [command, String(server.listening.pid)], { env: server.env })

/** `count` validates on `connections` connections, with `/health` (and on "on" `/metrics`) every `every` responses. */
const drive = async (server: Server, count: number) => {
  let started = 0
  const side = async () => {
    await (await fetch(`${server.listening.base}/health`)).text()
    if (server.metrics !== undefined) await (await fetch(`${server.metrics}/metrics`)).text()
  }
  const loop = async () => {
    while (started < count) {
      started++
      let response: Response | undefined
      while (response === undefined) {
        response = await fetch(server.validate, { method: "POST", headers: { "content-type": "application/json" }, body: server.body }).catch(
          (error: unknown) => {
            // undici does not send a POST again on a socket the server closed between requests: this does.
            if ((error as { cause?: { code?: string } }).cause?.code !== "ECONNRESET" || ++server.resets > 100) throw error
            return undefined
          }
        )
      }
      await response.text()
      if (response.status !== 200) server.bad++
      if (++server.answered % every === 0) await side()
    }
  }
  await Promise.all(Array.from({ length: connections }, loop))
}

/** The instructions of dump `part` of `server`, from callgrind's per-thread files, per response. */
const counted = async (server: Server, part: number): Promise<Counted> => {
  const stem = `${path.basename(server.prefix)}.${server.listening.pid}.${part}-`
  const files = fs.readdirSync(outDir).filter((f) => f.startsWith(stem)).map((f) => path.join(outDir, f))
  if (files.length === 0) throw new Error(`no callgrind dump ${stem}* in ${outDir}`)
  let all = 0
  let lumps = 0
  for (const file of files) {
    const summary = Number(/^summary: (\d+)$/m.exec(fs.readFileSync(file, "utf8"))?.[1] ?? 0)
    if (summary === 0) continue
    all += summary
    const { stdout } = await promisify(execFile)("callgrind_annotate", ["--inclusive=yes", "--threshold=100", file], { maxBuffer: 256 * 2 ** 20 })
    for (const name of lumpFunctions) {
      const line = stdout.split("\n").find((l) => l.includes(`:${name}(`))
      if (line !== undefined) lumps += Number(line.trim().split(" ")[0]!.replaceAll(",", ""))
    }
  }
  return { all: all / responses, lumps: lumps / responses }
}

/** Instructions per response without the lumps. */
const steady = (c: Counted) => c.all - c.lumps

const measure = async (name: string) => {
  // A store each, so that no server's count holds work it does for the others on a shared database (background
  // jobs, the change feed): on one database "off" counted 8 % more than "control", a cause not traced further.
  const stores = await Promise.all(roles.map(() => serverStore(name, databaseUrl, "instructions")))
  const servers: Array<Server> = []
  try {
    // All three start at once; those that did are stopped below when another did not.
    const started = await Promise.allSettled(roles.map((role, i) => startServer(role, stores[i]!.store, name)))
    for (const result of started) if (result.status === "fulfilled") servers.push(result.value)
    for (const result of started) if (result.status === "rejected") throw result.reason
    progress(`${name}: ${servers.map((s) => `${s.role} pid ${s.listening.pid}`).join(", ")}; warming up (${warmup} validates each, load ${loadAverage()})`)
    await Promise.all(servers.map((s) => drive(s, warmup)))
    const perRound: Array<Record<Role, Counted>> = []
    for (let round = 1; round <= rounds; round++) {
      await Promise.all(servers.map((s) => callgrind(s, "-z")))
      await Promise.all(servers.map((s) => drive(s, responses)))
      await Promise.all(servers.map((s) => callgrind(s, "-d")))
      const counts = Object.fromEntries(await Promise.all(servers.map(async (s) => [s.role, await counted(s, round)]))) as Record<Role, Counted>
      perRound.push(counts)
      progress(
        `${name} round ${round}: instructions per response ${roles.map((r) => `${r} ${fixed(counts[r].all)} (lumps ${fixed(counts[r].lumps)})`).join(", ")}; ` +
          `steady off ÷ on ${fixed(steady(counts.off) / steady(counts.on), 3)}, off ÷ control ${fixed(steady(counts.off) / steady(counts.control), 3)} (load ${loadAverage()})`
      )
    }
    const bad = servers.reduce((n, s) => n + s.bad, 0)
    if (bad > 0) throw new Error(`${name}: ${bad} validates did not answer 200`)
    progress(`${name}: connections reset and requests sent again: ${servers.map((s) => `${s.role} ${s.resets}`).join(", ")}`)
    const storeName = name === "memory" ? "memory" : "PostgreSQL"
    const mean = (pick: (c: Record<Role, Counted>) => number) => perRound.reduce((n, c) => n + pick(c), 0) / perRound.length
    const k = (instructions: number) => fixed(instructions / 1000, 1)
    return (["on", "control"] as const).map((role) => [
      `${storeName}: ${role === "on" ? "off ÷ on" : "control: off ÷ off"}`,
      `${k(mean((c) => steady(c.off)))} / ${k(mean((c) => steady(c[role])))}`,
      `**${fixed(mean((c) => steady(c.off) / steady(c[role])), 3)}**`,
      perRound.map((c) => fixed(steady(c.off) / steady(c[role]), 3)).join(", "),
      `${k(mean((c) => c.off.lumps))} / ${k(mean((c) => c[role].lumps))}`,
      `${k(mean((c) => c.off.all))} / ${k(mean((c) => c[role].all))}`,
      fixed(mean((c) => c.off.all / c[role].all), 3)
    ])
  } finally {
    await Promise.all(servers.map((s) => s.listening.stop(5_000)))
    await Promise.all(stores.map((store) => store.cleanup()))
  }
}

const rows: Array<Array<string>> = []
try {
  for (const name of configs) {
    if (name === "postgres" && databaseUrl === "") {
      progress("postgres: skipped (no DATABASE_URL)")
      continue
    }
    rows.push(...await measure(name))
  }
} finally {
  fs.rmSync(outDir, { recursive: true, force: true })
}
process.stdout.write(
  `${machineLine()}\ncallgrind, node ${v8Flags.join(" ")}, POST /validate on ${connections} connections: ${warmup} to warm up, then ${rounds} × ${responses} counted; ` +
    `every ${every} responses /health on every server and /metrics on "on"\n\n` +
    markdownTable(
      [
        "store: ratio",
        "steady work, k instructions per response (off / other)",
        "steady work: ratio (mean of rounds)",
        "each round",
        "lumps: JIT compilation and full GC, k per response (off / other)",
        "all, k per response (off / other)",
        "all: ratio"
      ],
      rows
    ) + "\n"
)
