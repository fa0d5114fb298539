/**
 * Where the µs of a validate go (issue 32), and how long the server takes to start.
 *
 * `node bench/profile.ts [validate] [activate] [startup]` (after `npx tsc -b`; default validate and startup):
 *
 * - `activate`: as `validate`, with the quick bench's activate+deactivate cycles (wrk's `cycleScript`, one license
 *   with one seat per connection) instead; every figure is per cycle (an answered deactivation and its
 *   activation), the seats are checked after the warm-up and the run; on PostgreSQL the run's transactions and
 *   rows per cycle (pg_stat_database) and what the backends were doing (pg_stat_activity every 50 ms: running, waiting
 *   for a lock, idle in transaction). `PROFILE_STORES` defaults to `floor,pglite,postgres` here.
 *
 * - `validate`: for each target of `PROFILE_STORES` (default `floor,memory,pglite`; also `postgres` with
 *   `DATABASE_URL`), the floor (`floor.ts`) or `lm serve` (the built server, rate limits on with limits no load
 *   reaches and the event log on, as in the quick bench) runs under `node --cpu-prof`; 64 licenses are seeded,
 *   wrk (one thread, `BENCH_CONNECTIONS` connections) loads POST /validate for a warm-up, then for
 *   `PROFILE_SECONDS`; the process is stopped with SIGTERM, so that Node writes the profile, and only the
 *   samples of the measured run are read (the profile's timestamps and ours are both the monotonic clock).
 *   The profile counts wall time while a thread was not idle, which on a loaded machine includes time spent
 *   waiting for a core; so its figures are scaled to the main thread's CPU time over the same run (/proc). Every
 *   figure is µs per request: that time ÷ the requests wrk reports. Printed: the steps of a validate side by
 *   side for every target (each sample goes to the innermost frame of its stack that a step claims, see
 *   `steps`; so the effect runtime's own work is its step, whatever domain code it runs), then per target the
 *   steps with their top functions, the packages, the top functions by self and by total time and the modules
 *   by self time; for PGlite also its worker thread's profile (not scaled).
 * - `startup`: `npm start` on an existing PGlite folder (migrated by a first start) to the "Listening on" line,
 *   its `tsc -b` of an unchanged tree and `lm serve` alone (from its bundle, and with the bundle set aside); then `npm run lm -- api-keys list` on the same folder
 *   (with the server stopped: PGlite takes one process) and on PostgreSQL (`DATABASE_URL`, while a server runs
 *   on it). Each `PROFILE_STARTS` times (default 3): median and spread.
 *
 * `node bench/profile.ts analyze <folder>…` summarises the runs a `PROFILE_DIR` kept (`<PROFILE_DIR>/<target>`,
 * each with its `run.json`) again, e.g. after changing `steps`; `analyze <file.cpuprofile> <requests>` summarises
 * every sample of any profile.
 *
 * Settings: PROFILE_SECONDS (measured run, default 20), PROFILE_WARMUP (5), PROFILE_STORES (floor,memory,pglite),
 * PROFILE_INTERVAL_US (sampling interval, default 250), PROFILE_TOP (functions listed, default 30), PROFILE_DIR
 * (keep the profiles there; default a temporary folder, removed after), PROFILE_STARTS (3), PROFILE_NODE_ARGS
 * (more node options for the profiled processes, space-separated, e.g. `--max-semi-space-size=32`, to try a
 * lever), BENCH_CONNECTIONS (64), DATABASE_URL.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  childEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  limitsOn,
  lmBin,
  loadAverage,
  machineLine,
  pgliteDataDir,
  querySql,
  ready,
  repoRoot,
  requireBundle,
  seedValidateKeys,
  startListening,
  withoutBundle
} from "./support.ts"
import { cycleScript, ensureWrk, runWrk, validateScript, type WrkRun } from "./wrk.ts"

const progress = (line: string) => process.stderr.write(`profile: ${line}\n`)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const top = envNumber("PROFILE_TOP", 30)
/** `PROFILE_NODE_ARGS`: more options for node (space-separated), e.g. `--max-semi-space-size=32`, to try a lever. */
const nodeArgs = (process.env.PROFILE_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")

// ---------------------------------------------------------------------------------------------------------------
// Reading a .cpuprofile

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A frame's file, shortened: `node:…`, `effect/…` (a package's path below its `dist`), `@lm/http/server/…`, `@lm/server/…`. */
export const moduleOf = (url: string): string => {
  if (url === "") return "(native / builtin)"
  if (url.startsWith("node:")) return url
  if (url.startsWith("wasm:")) return "(wasm)"
  const packageMatch = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:dist\/(?:esm\/|cjs\/)?)?(.*)$/.exec(url)
  if (packageMatch !== null) return `${packageMatch[1]}/${packageMatch[2]}`
  const ours = /\/(?:packages|apps)\/([^/]+)\/dist\/(.*)$/.exec(url)
  if (ours !== null) return `@lm/${ours[1]}/${ours[2]}`
  return url.replace(/^file:\/\//, "").replace(repoRoot, "")
}

/** A module's package: `node`, `effect`, `@lm/domain`, …, or `(native / builtin)`. */
const packageOf = (module: string): string => {
  if (module.startsWith("node:")) return "node"
  if (module.startsWith("(")) return module
  const parts = module.split("/")
  return module.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!
}

/** A step of a request, as a reader names it, and the frames it claims. */
interface Step {
  readonly name: string
  readonly claims: (frame: CallFrame, module: string) => boolean
}

/** Whether `module` is one of the files `names` (a path's end) of one of our packages (`@lm/…`). */
const file = (module: string, ...names: ReadonlyArray<string>) => module.startsWith("@lm/") && names.some((n) => module.endsWith(`/${n}`))

/**
 * The steps of a validate, in the order a request meets them. A sample goes to the innermost frame of its stack
 * that one of them claims (so a frame of effect's runtime called by the validation cache counts as "Effect
 * runtime"; the domain's own code as its step); V8's builtins (no file) are claimed only by name (JSON), else
 * their time goes to the caller, as does the time of node's own modules other than HTTP's (a `Buffer.from` called
 * by the token's code is the token's). Frames no step claims fall through to their caller, up to the root:
 * "other".
 */
const steps: ReadonlyArray<Step> = [
  { name: "GC", claims: (f) => f.functionName === "(garbage collector)" },
  { name: "(program): V8 and native code outside JS frames (libuv, I/O polling, compiler)", claims: (f) => f.functionName === "(program)" },
  // V8 rarely shows JSON.parse and JSON.stringify as frames of their own: their time is their caller's self time.
  {
    name: "JSON.parse of the body (self time of FastPath `respondTo`, floor `handle`)",
    claims: (f, m) =>
      m.startsWith("(") && f.functionName === "parse" || file(m, "server/FastPath.js") && f.functionName === "respondTo" ||
      m.endsWith("bench/floor.ts") && f.functionName === "handle"
  },
  {
    name: "JSON.stringify of the answer (self time of effect/http `jsonUnsafe`, floor `reply`)",
    claims: (f, m) =>
      m.startsWith("(") && f.functionName === "stringify" || m === "effect/http/HttpBody.js" && f.functionName === "jsonUnsafe" ||
      m.endsWith("bench/floor.ts") && f.functionName === "reply"
  },
  { name: "the floor's own answer (payload text, license object)", claims: (_, m) => m.endsWith("bench/floor.ts") },
  { name: "Ed25519 sign (node:crypto)", claims: (_, m) => m === "node:internal/crypto/sig" || m === "node:internal/crypto/keys" },
  {
    name: "request id (randomUUID) and request logging",
    claims: (f, m) => m === "node:internal/crypto/random" || f.functionName === "requestIdFor" || file(m, "server/Routing.js", "server/RequestSteps.js")
  },
  { name: "rate limiter (guard and buckets)", claims: (_, m) => file(m, "rateLimit.js", "RateLimiter.js", "RateLimits.js", "RedisRateLimits.js", "rateLimits.js") },
  { name: "event log record (ActivityRecorder, Licensing's `logged`)", claims: (f, m) => file(m, "ActivityRecorder.js") || (file(m, "licensing/Licensing.js") && f.functionName.includes("logged")) },
  { name: "validation cache lookup", claims: (_, m) => file(m, "ValidationCache.js") },
  { name: "store (memory tables, PostgreSQL/PGlite client)", claims: (_, m) => m.startsWith("@lm/storage-") || m.startsWith("@electric-sql/") || m.startsWith("postgres/") },
  {
    name: "rule evaluation (validateLicense, blacklist, key parsing)",
    claims: (_, m) => file(m, "licensing/validation.js", "Blacklist.js", "licensing/keys.js", "licensing/license.js", "licensing/machine.js", "domain/core.js", "verify/licenseKey.js")
  },
  { name: "token build (payload, base64url; signing around the native call)", claims: (_, m) => file(m, "Token.js", "Tokens.js", "Signer.js", "SigningKey.js", "SigningKeys.js") },
  {
    name: "seat changes: group commit and pure plan (SeatBatches, seatChanges)",
    claims: (_, m) => file(m, "licensing/SeatBatches.js", "licensing/seatChanges.js")
  },
  { name: "domain service (Licensing.validate / activate / deactivate)", claims: (_, m) => file(m, "licensing/Licensing.js") },
  { name: "answer build (license/machine to wire, envelope)", claims: (_, m) => file(m, "ClientAnswers.js", "Wire.js", "Envelope.js", "ApiErrors.js", "Responses.js") },
  { name: "payload decoding (endpoint schema)", claims: (_, m) => m.startsWith("effect/") && /\/(Schema|SchemaParser|SchemaAST|SchemaIssue|SchemaGetter|SchemaTransformation|Check|Result)\.js$/.test(m) },
  {
    name: "fast path: request listener, routing, guards, body read and deadline, facts, CORS (ours)",
    claims: (_, m) => file(m, "FastPath.js", "ClientPipeline.js", "ClientIp.js", "Cors.js", "ErrorEnvelope.js", "Guards.js", "server/Http.js", "BodyTimeout.js")
  },
  { name: "effect/http response object (jsonUnsafe, headers)", claims: (_, m) => m.startsWith("effect/") && /\/(HttpServerResponse|Headers|HttpBody)\.js$/.test(m) },
  { name: "Effect runtime (fibers, run loop, context, pipe)", claims: (_, m) => m.startsWith("effect/") },
  {
    name: "response write (node:http outgoing, socket write)",
    claims: (f, m) =>
      m === "node:_http_outgoing" || m === "node:net" && /write|Write|end/.test(f.functionName) ||
      m === "node:internal/stream_base_commons" && /write|Write/.test(f.functionName) || m.startsWith("node:internal/streams/writable")
  },
  {
    name: "HTTP parsing and request dispatch in node (parser, IncomingMessage, events, body stream)",
    claims: (_, m) =>
      m === "node:_http_server" || m === "node:_http_common" || m === "node:_http_incoming" || m === "node:events" ||
      m.startsWith("node:internal/streams/") || m === "node:internal/stream_base_commons" || m === "node:net"
  },
  { name: "timers, microtasks, process ticks (node)", claims: (_, m) => m === "node:internal/timers" || m === "node:internal/process/task_queues" || m === "node:internal/async_hooks" },
]

const otherStep = "other (node internals and frames no step claims, e.g. timers' and ticks' own code)"

/** A profile's samples in a time window, and the tables made from them (µs of profile time). */
export interface Summary {
  /** Busy (non-idle) µs in the window, and all µs. */
  readonly busyMicros: number
  readonly windowMicros: number
  readonly steps: ReadonlyArray<{ readonly name: string; readonly micros: number }>
  /** Per step, the self time of the functions whose samples went to it. */
  readonly functionsByStep: Map<string, Map<string, number>>
  readonly selfByFunction: Map<string, number>
  readonly totalByFunction: Map<string, number>
  readonly selfByModule: Map<string, number>
  readonly totalByModule: Map<string, number>
  readonly selfByPackage: Map<string, number>
}

const add = (map: Map<string, number>, key: string, micros: number) => map.set(key, (map.get(key) ?? 0) + micros)

/**
 * Summarises the samples of `profile` taken between `from` and `to` (µs on the profile's clock; default: all).
 */
export const summarise = (profile: CpuProfile, from = -Infinity, to = Infinity): Summary => {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const stepOf = new Map<number, string>()
  const stepOfNode = (id: number): string => {
    const known = stepOf.get(id)
    if (known !== undefined) return known
    const frame = byId.get(id)!.callFrame
    const module = moduleOf(frame.url)
    const claimed = steps.find((s) => s.claims(frame, module))?.name
    const up = parent.get(id)
    const result = claimed ?? (up === undefined ? otherStep : stepOfNode(up))
    stepOf.set(id, result)
    return result
  }
  const functionKey = (frame: CallFrame) =>
    `${frame.functionName === "" ? "(anonymous)" : frame.functionName} ${moduleOf(frame.url)}${frame.url === "" ? "" : `:${frame.lineNumber + 1}`}`
  const stepMicros = new Map<string, number>()
  const functionsByStep = new Map<string, Map<string, number>>()
  const selfByFunction = new Map<string, number>()
  const totalByFunction = new Map<string, number>()
  const selfByModule = new Map<string, number>()
  const totalByModule = new Map<string, number>()
  const selfByPackage = new Map<string, number>()
  let busy = 0
  let window = 0
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0
    at += micros
    if (at < from || at > to) return
    window += micros
    const leaf = byId.get(id)!
    if (leaf.callFrame.functionName === "(idle)") return
    busy += micros
    const step = stepOfNode(id)
    add(stepMicros, step, micros)
    const leafKey = functionKey(leaf.callFrame)
    let inStep = functionsByStep.get(step)
    if (inStep === undefined) functionsByStep.set(step, inStep = new Map())
    add(inStep, leafKey, micros)
    add(selfByFunction, leafKey, micros)
    add(selfByModule, moduleOf(leaf.callFrame.url), micros)
    add(selfByPackage, packageOf(moduleOf(leaf.callFrame.url)), micros)
    const functions = new Set<string>()
    const modules = new Set<string>()
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
      const frame = byId.get(node)!.callFrame
      if (frame.functionName === "(root)") continue
      functions.add(functionKey(frame))
      modules.add(moduleOf(frame.url))
    }
    for (const f of functions) add(totalByFunction, f, micros)
    for (const m of modules) add(totalByModule, m, micros)
  })
  const order = [...steps.map((s) => s.name), otherStep]
  return {
    busyMicros: busy,
    windowMicros: window,
    steps: order.filter((name) => stepMicros.has(name)).map((name) => ({ name, micros: stepMicros.get(name)! })),
    functionsByStep,
    selfByFunction,
    totalByFunction,
    selfByModule,
    totalByModule,
    selfByPackage
  }
}

const sorted = (map: Map<string, number>) => [...map.entries()].sort((a, b) => b[1] - a[1])
const share = (micros: number, busy: number) => `${fixed((100 * micros) / busy, 1)} %`

/**
 * The tables of a summary. Every figure is µs per request: profile time × `scale` ÷ `requests`, where `scale`
 * turns the profile's busy time into the thread's CPU time (see {@link profileRun}; 1 leaves profile time).
 */
export const tables = (summary: Summary, requests: number, scale = 1): string => {
  const { busyMicros: busy } = summary
  const perRequest = (micros: number) => fixed((micros * scale) / requests, 1)
  const stepsTable = markdownTable(
    ["step", `µs per ${unitLong()}`, "share of busy time", `its top functions (self µs/${unit})`],
    [
      ...summary.steps.map((s) => [
        s.name,
        perRequest(s.micros),
        share(s.micros, busy),
        sorted(summary.functionsByStep.get(s.name) ?? new Map()).slice(0, 4).map(([f, m]) => `\`${f}\` ${perRequest(m)}`).join("; ")
      ]),
      ["**total (busy)**", `**${perRequest(busy)}**`, "100 %", ""]
    ]
  )
  const functions = (map: Map<string, number>, other: Map<string, number>, selfFirst: boolean) =>
    markdownTable(
      ["function (file:line)", selfFirst ? `self µs/${unit}` : `total µs/${unit}`, selfFirst ? `total µs/${unit}` : `self µs/${unit}`, "share (self)"],
      sorted(map).slice(0, top).map(([name, micros]) => [
        `\`${name}\``,
        perRequest(micros),
        perRequest(other.get(name) ?? 0),
        share(selfFirst ? micros : (other.get(name) ?? 0), busy)
      ])
    )
  const modules = markdownTable(
    ["module (file)", `self µs/${unit}`, `total µs/${unit}`, "share (self)"],
    sorted(summary.selfByModule).slice(0, top).map(([name, micros]) => [
      `\`${name}\``,
      perRequest(micros),
      perRequest(summary.totalByModule.get(name) ?? 0),
      share(micros, busy)
    ])
  )
  const packages = markdownTable(
    ["package", `self µs/${unit}`, "share"],
    sorted(summary.selfByPackage).map(([name, micros]) => [name, perRequest(micros), share(micros, busy)])
  )
  return [
    "Steps (each sample to the innermost frame a step claims):",
    "",
    stepsTable,
    "",
    "Packages (self time):",
    "",
    packages,
    "",
    `Functions by self time (top ${top}):`,
    "",
    functions(summary.selfByFunction, summary.totalByFunction, true),
    "",
    `Functions by total time (top ${top}; a function counted once per sample however often it is on the stack):`,
    "",
    functions(summary.totalByFunction, summary.selfByFunction, false),
    "",
    `Modules by self time (top ${top}):`,
    "",
    modules
  ].join("\n")
}

/** What the figures are per: a request (validate) or a cycle (activate: an answered deactivation and its activation). */
let unit: "req" | "cycle" = "req"
const unitLong = () => (unit === "req" ? "request" : "cycle")

export const readProfile = (file: string) => JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile

// ---------------------------------------------------------------------------------------------------------------
// Profiling the server under validate load

/** Microseconds on the monotonic clock, the one V8's profile timestamps use. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n)

/**
 * CPU time (user + system) in µs so far of a process (`/proc/<pid>/stat`, every thread) or of one of its threads
 * (`/proc/<pid>/task/<tid>/stat`; the main thread's tid is the pid); NaN when it is gone.
 */
const cpuMicrosOf = (pid: number, tid?: number): number => {
  try {
    const file = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`
    // Fields 14 and 15 (after the command name in parentheses), in clock ticks of 10 ms.
    const fields = fs.readFileSync(file, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}

/** CPU µs so far of each thread of a process, summed by thread name (`/proc/<pid>/task/<tid>/comm`; the main thread as "main"). */
const cpuByThreadName = (pid: number): Map<string, number> => {
  const out = new Map<string, number>()
  let tids: Array<string> = []
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const name = Number(tid) === pid ? "main" : fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim().replace(/[0-9]+$/, "N")
      const micros = cpuMicrosOf(pid, Number(tid))
      if (Number.isFinite(micros)) out.set(name, (out.get(name) ?? 0) + micros)
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out
}

const auth = bootstrapCredentials()

const storeEnvs: Record<
  string,
  () => Promise<{ readonly env: Record<string, string>; readonly cleanup: () => Promise<void>; readonly database?: string }>
> = {
  floor: async () => ({ env: {}, cleanup: async () => {} }),
  memory: async () => ({ env: { LM_STORAGE: "memory" }, cleanup: async () => {} }),
  pglite: async () => {
    const data = await pgliteDataDir()
    return { env: { LM_DATA_DIR: data.dir }, cleanup: data.remove }
  },
  postgres: async () => {
    const database = await freshPostgresDatabase(process.env.DATABASE_URL ?? "", "profile")
    return { env: { DATABASE_URL: database.url }, cleanup: database.drop, database: database.name }
  }
}

/** Keys of the right format for the floor, which keeps no state. */
const floorKeys = Array.from({ length: 64 }, (_, i) => `BNCH-FLOR-0000-${String(i).padStart(4, "0")}`)

/** The measured run of a profiled process, kept beside its profiles as `run.json` (for `analyze`). */
interface MeasuredRun {
  readonly store: string
  readonly pid: number
  /** The run's start and end on the monotonic clock (µs). */
  readonly from: number
  readonly to: number
  readonly requests: number
  readonly rps: number
  readonly p99: number
  /** CPU µs over the run: the process (every thread) and its main thread. */
  readonly cpu: number
  readonly mainCpu: number
  readonly load: string
  /** `activate`: the run's figures are per cycle (`requests` holds the cycles). */
  readonly scenario?: "validate" | "activate"
  /** CPU µs per request or cycle of the process's threads over the run, by thread name (/proc). */
  readonly threads?: string
  /** PostgreSQL: transactions, rows and lock waits during the run (pg_stat_database, pg_stat_activity samples). */
  readonly store_stats?: string
}

/** One profiled run: its summary, and its detailed tables. */
interface Profiled {
  readonly run: MeasuredRun
  readonly summary: Summary
  /** Profile time → main-thread CPU time. */
  readonly scale: number
  readonly workerPerRequest: number
  readonly text: string
}

/**
 * Reads the profiles a run left in `dir` (the main thread's, and any worker thread's) and summarises the samples
 * of the measured run. The profile counts wall time while the thread was not idle, including time it waited for
 * a core on the loaded machine; the main thread's CPU time from /proc over the same run scales it to CPU time,
 * assuming the waits fell evenly on every step.
 */
const analyseRun = (dir: string, run: MeasuredRun): Profiled => {
  const files = fs.readdirSync(dir).filter((name) => name.includes(`.${run.pid}.`) && name.endsWith(".cpuprofile"))
  const main = files.find((name) => name.includes(`.${run.pid}.0.`))
  if (main === undefined) throw new Error(`no profile of the main thread in ${dir} (${files.join(", ")})`)
  const profile = readProfile(path.join(dir, main))
  if (!(profile.startTime <= run.from && profile.endTime >= run.to)) {
    throw new Error(`the profile (${profile.startTime}–${profile.endTime} µs) does not cover the run (${run.from}–${run.to} µs on the monotonic clock)`)
  }
  const summary = summarise(profile, run.from, run.to)
  const scale = Number.isFinite(run.mainCpu) ? run.mainCpu / summary.busyMicros : 1
  const perRequest = (micros: number) => fixed(micros / run.requests, 1)
  const parts = [
    `### ${run.store}: ${unit === "req" ? "validate" : "activate+deactivate"}, ${run.requests} ${unit === "req" ? "requests" : "cycles"} in ${fixed((run.to - run.from) / 1e6, 1)} s (${fixed(run.rps)} req/s, p99 ${
      fixed(run.p99, 1)
    } ms), load average ${run.load}`,
    "",
    `Main thread: ${perRequest(run.mainCpu)} µs of CPU per ${unitLong()} (/proc), ${perRequest(summary.busyMicros)} µs busy in the profile (idle ${
      share(summary.windowMicros - summary.busyMicros, summary.windowMicros)
    } of the run); the figures below are the profile's, scaled by ${fixed(scale, 2)} to the main thread's CPU time. The process (every thread) used ${
      perRequest(run.cpu)
    } µs of CPU per ${unitLong()}${run.threads === undefined ? "" : ` (by thread: ${run.threads})`}.${run.store_stats === undefined ? "" : ` ${run.store_stats}`}`,
    "",
    tables(summary, run.requests, scale)
  ]
  let workerBusy = 0
  for (const other of files.filter((name) => name !== main)) {
    const worker = summarise(readProfile(path.join(dir, other)), run.from, run.to)
    workerBusy += worker.busyMicros
    parts.push(
      "",
      `#### Worker thread \`${other}\`: busy ${perRequest(worker.busyMicros)} µs per ${unitLong()} (profile time, not scaled)`,
      "",
      markdownTable(
        ["module (file)", `self µs/${unit}`, "share (self)"],
        sorted(worker.selfByModule).slice(0, 12).map(([name, micros]) => [`\`${name}\``, perRequest(micros), share(micros, worker.busyMicros)])
      )
    )
  }
  return { run, summary, scale, workerPerRequest: workerBusy / run.requests, text: parts.join("\n") }
}

/** PostgreSQL's counters of the database `name` (pg_stat_database), read after its backends flushed them. */
const databaseCounters = async (url: string, name: string) => {
  const [row] = await querySql(
    url,
    `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_fetched, tup_returned FROM pg_stat_database WHERE datname = '${name}'`
  )
  return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)]))
}

/**
 * Samples, every 50 ms until `stop`, what the backends of database `name` are doing (pg_stat_activity): how many
 * run a statement, wait for a lock, wait for the client (idle in transaction) or are idle.
 */
const sampleActivity = (url: string, name: string) => {
  const totals = new Map<string, number>()
  let samples = 0
  let running = true
  const loop = (async () => {
    while (running) {
      const rows = await querySql(
        url,
        `SELECT CASE WHEN wait_event_type = 'Lock' THEN 'waiting for a lock' WHEN state = 'active' THEN 'running a statement (or waiting on I/O)'
           WHEN state = 'idle in transaction' THEN 'idle in transaction (waiting for the server)' ELSE 'idle' END AS what, count(*) AS n
         FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid() GROUP BY 1`
      )
      samples++
      for (const row of rows) totals.set(String(row.what), (totals.get(String(row.what)) ?? 0) + Number(row.n))
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  return async () => {
    running = false
    await loop
    return [...totals.entries()].map(([what, n]) => `${what} ${fixed(n / samples, 1)}`).join(", ")
  }
}

/**
 * Profiles one target under load (see the module comment): the floor, or `lm serve` on `store`; the profiles and
 * `run.json` go to `<folder>/<store>`. `validate`: POST /validate over 64 licenses, figures per request.
 * `activate`: the quick bench's activate+deactivate cycles on one license (64 seats), figures per cycle (an
 * answered deactivation), the seats checked after the run; on PostgreSQL also the transactions, rows and lock
 * waits of the run.
 */
const profileRun = async (store: string, scenario: "validate" | "activate", folder: string): Promise<Profiled> => {
  const seconds = envNumber("PROFILE_SECONDS", 20)
  const warmup = envNumber("PROFILE_WARMUP", 5)
  const interval = envNumber("PROFILE_INTERVAL_US", 250)
  const isFloor = store === "floor"
  const { env, cleanup, database } = await storeEnvs[store]!()
  const dir = path.join(folder, store)
  fs.mkdirSync(dir, { recursive: true })
  try {
    const profiling = ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", String(interval), ...nodeArgs]
    const listening = isFloor
      ? await startListening([...profiling, path.join(repoRoot, "bench/floor.ts")], childEnv({ PORT: "0", HOST: "127.0.0.1" }))
      : await startListening([...profiling, lmBin, "serve"], bundledServerEnv(auth, env, limitsOn))
    let run: MeasuredRun
    try {
      const apiPath = new URL(listening.base).pathname
      let wrk: (s: number) => Promise<WrkRun>
      let cycleKey: string | undefined
      if (scenario === "validate") {
        const keys = isFloor ? floorKeys : await ready(listening.base).then(() => seedValidateKeys(listening.base, auth, 64))
        wrk = (s) => runWrk({ url: listening.base, script: validateScript, args: [apiPath, ...keys], seconds: s, connections })
      } else {
        cycleKey = isFloor
          ? "BNCH-FLOR-CYCL-0000"
          : await ready(listening.base).then(async () =>
            (await expectStatus(201, listening.base, "POST", "/licenses", { max_activations: connections }, auth)).body.data.license_key as string
          )
        wrk = (s) => runWrk({ url: listening.base, script: cycleScript, args: [apiPath, cycleKey!, String(2 * connections)], seconds: s, connections })
      }
      /** Cycles mode: every seat the run left is freed, and the count must be 0 (the quick bench checks more). */
      const seatsAfter = async (measured: WrkRun) => {
        if (scenario !== "activate" || isFloor) return ""
        await new Promise((r) => setTimeout(r, 300))
        const read = async () => (await expectStatus(200, listening.base, "GET", `/licenses/${encodeURIComponent(cycleKey!)}`, undefined, auth)).body.data
        const before = await read()
        const active = (before.machines as ReadonlyArray<{ status: string; fingerprint: string }>).filter((m) => m.status === "active")
        const sure = Object.entries(measured.state ?? {}).filter(([, s]) => s === "active").map(([fp]) => fp)
        const missing = sure.filter((fp) => !active.some((m) => m.fingerprint === fp))
        for (const m of active) await expectStatus(200, listening.base, "POST", "/deactivate", { license_key: cycleKey, fingerprint: m.fingerprint })
        const after = await read()
        const exact = before.activation_count === active.length && active.length <= connections && missing.length === 0 && after.activation_count === 0
        if (!exact) throw new Error(`seats WRONG: ${before.activation_count} held, ${active.length} listed active, missing ${missing.join(" ")}, after clean-up ${after.activation_count}`)
        return `; seats exact (${active.length} held after the run, 0 after clean-up)`
      }
      const warm = await wrk(warmup)
      progress(`${store}: pid ${listening.pid}; warm-up ${fixed(warm.rps)} req/s${await seatsAfter(warm)}`)
      const counters = database === undefined ? undefined : () => databaseCounters(process.env.DATABASE_URL!, database)
      const countersBefore = await counters?.()
      const activity = database === undefined ? undefined : sampleActivity(process.env.DATABASE_URL!, database)
      // The server's PostgreSQL backends (its pool's connections live as long as it does): their CPU over the run.
      const backends = database === undefined
        ? []
        : (await querySql(process.env.DATABASE_URL!, `SELECT pid FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`))
          .map((row) => Number(row.pid))
      const backendCpu = () => backends.reduce((sum, pid) => sum + (Number.isFinite(cpuMicrosOf(pid)) ? cpuMicrosOf(pid) : 0), 0)
      const backendsBefore = backendCpu()
      const threadsBefore = cpuByThreadName(listening.pid)
      const cpuBefore = cpuMicrosOf(listening.pid)
      const mainBefore = cpuMicrosOf(listening.pid, listening.pid)
      const from = monotonicMicros()
      const measured = await wrk(seconds)
      const to = monotonicMicros()
      const cpu = cpuMicrosOf(listening.pid) - cpuBefore
      const mainCpu = cpuMicrosOf(listening.pid, listening.pid) - mainBefore
      const threads = [...cpuByThreadName(listening.pid)].map(([name, micros]) => [name, micros - (threadsBefore.get(name) ?? 0)] as const)
        .filter(([, micros]) => micros > 0).sort((a, b) => b[1] - a[1])
      const backendsUsed = backendCpu() - backendsBefore
      const waits = await activity?.()
      const count = scenario === "validate" ? measured.requests : measured.counts!.deactivated
      let storeStats: string | undefined
      if (counters !== undefined) {
        // Backends flush their counters at most once a second.
        await new Promise((r) => setTimeout(r, 1_500))
        const after = await counters()
        const per = (k: string) => fixed((after[k]! - countersBefore![k]!) / count, 2)
        storeStats = `PostgreSQL per ${unitLong()} (pg_stat_database): ${per("xact_commit")} commits, ${per("xact_rollback")} rollbacks, ${
          per("tup_inserted")
        } rows inserted, ${per("tup_updated")} updated, ${per("tup_deleted")} deleted, ${per("tup_fetched")} fetched; its ${backends.length} backends used ${fixed(backendsUsed / count, 1)} µs of CPU per ${unitLong()} (/proc); backends on average (pg_stat_activity every 50 ms): ${waits}.`
      }
      run = {
        store,
        pid: listening.pid,
        from,
        to,
        requests: count,
        rps: measured.rps,
        p99: measured.p99,
        cpu,
        mainCpu,
        load: loadAverage(),
        scenario,
        threads: threads.map(([name, micros]) => `${name} ${fixed(micros / count, 1)}`).join(", "),
        ...(storeStats === undefined ? {} : { store_stats: storeStats })
      }
      progress(`${store}: ${measured.requests} requests${scenario === "validate" ? "" : `, ${count} cycles`} in ${fixed(measured.seconds, 1)} s (${fixed(measured.rps)} req/s, p99 ${
        fixed(measured.p99, 1)
      } ms, non-2xx ${measured.non2xx}, errors ${measured.errors})${await seatsAfter(measured)}; stopping`)
      if (storeStats !== undefined) progress(`${store}: ${storeStats}`)
    } finally {
      // SIGTERM: the server drains and exits, and Node writes the profile.
      await listening.stop()
    }
    fs.writeFileSync(path.join(dir, "run.json"), JSON.stringify(run))
    return analyseRun(dir, run)
  } finally {
    await cleanup()
  }
}

/** The steps of every profiled run side by side, CPU µs per request. */
const stepsSideBySide = (runs: ReadonlyArray<Profiled>): string => {
  const names = [...steps.map((s) => s.name), otherStep].filter((name) => runs.some((r) => r.summary.steps.some((s) => s.name === name)))
  const micros = (r: Profiled, name: string) => r.summary.steps.find((s) => s.name === name)?.micros ?? 0
  const perRequest = (r: Profiled, profileMicros: number) => fixed((profileMicros * r.scale) / r.run.requests, 1)
  return markdownTable(
    ["step", ...runs.map((r) => `${r.run.store} µs/${unit}`)],
    [
      ...names.map((name) => [name, ...runs.map((r) => perRequest(r, micros(r, name)))]),
      ["**main thread (CPU, /proc)**", ...runs.map((r) => `**${fixed(r.run.mainCpu / r.run.requests, 1)}**`)],
      ["other threads: PGlite's worker (profile time)", ...runs.map((r) => (r.workerPerRequest === 0 ? "–" : fixed(r.workerPerRequest, 1)))],
      ["process, every thread (CPU, /proc)", ...runs.map((r) => fixed(r.run.cpu / r.run.requests, 1))],
      ["req/s during the profile (wrk)", ...runs.map((r) => fixed(r.run.rps))],
      ...(unit === "cycle" ? [["cycles/s during the profile (answered deactivations)", ...runs.map((r) => fixed(r.run.requests / ((r.run.to - r.run.from) / 1e6)))]] : [])
    ]
  )
}

// ---------------------------------------------------------------------------------------------------------------
// Start-up and commands

/** Runs a command until it exits (or until `until` matches its output, then stops it); ms taken. */
const timed = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, until?: RegExp): Promise<{ millis: number; output: string }> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"], detached: until !== undefined })
    let output = ""
    let millis: number | undefined
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (until !== undefined && millis === undefined && until.test(output)) {
        millis = performance.now() - started
        // npm runs the server in a child: stop the whole group.
        process.kill(-child.pid!, "SIGTERM")
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("error", reject)
    child.once("exit", (code) => {
      // The server npm started may still be stopping (and holding the PGlite folder): wait for the whole group.
      if (until !== undefined && millis !== undefined) return void groupGone(child.pid!).then(() => resolve({ millis: millis!, output }))
      if (until === undefined && code === 0) return resolve({ millis: performance.now() - started, output })
      reject(new Error(`${command} ${args.join(" ")} exited (${code}):\n${output}`))
    })
  })

/** Waits until no process of the group `pgid` is left (npm's children stop after it). */
const groupGone = async (pgid: number) => {
  for (let i = 0; i < 300; i++) {
    try {
      process.kill(-pgid, 0)
    } catch {
      return
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** npm as the user runs it (its scripts run the project's Node 24 from node_modules/.bin). */
const npm = "npm"

const startup = async (): Promise<string> => {
  requireBundle()
  const starts = envNumber("PROFILE_STARTS", 3)
  const data = await pgliteDataDir()
  const env = childEnv({ LM_DATA_DIR: data.dir, PORT: "0", HOST: "127.0.0.1", PATH: process.env.PATH ?? "" })
  const listeningLine = /Listening on http/
  const rows: Array<Array<string>> = []
  const series = async (label: string, run: () => Promise<number>) => {
    const times: Array<number> = []
    for (let i = 0; i < starts; i++) times.push(await run())
    progress(`${label}: ${times.map((t) => fixed(t)).join(", ")} ms`)
    rows.push([label, fixed(median(times)), `${fixed(Math.min(...times))}–${fixed(Math.max(...times))}`, loadAverage()])
  }
  const untilListening = async (command: string, args: ReadonlyArray<string>) => (await timed(command, args, env, listeningLine)).millis
  try {
    // The first start migrates the copy of the template: the folder then exists, as an installed server's does.
    progress("startup: first start (migrates the PGlite folder)")
    const first = await timed(process.execPath, [lmBin, "serve"], env, listeningLine)
    progress(`startup: first start ${fixed(first.millis)} ms`)
    await series("`npm start` to \"Listening on\" (existing PGlite folder; includes `tsc -b` of an unchanged tree)", () =>
      untilListening(npm, ["start"]))
    await series("`tsc -b` of an unchanged tree (the first part of `npm start`)", async () =>
      (await timed(process.execPath, [path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-b"], env)).millis)
    await series("`node apps/server/dist/bin/lm.js serve` to \"Listening on\" (existing PGlite folder)", () =>
      untilListening(process.execPath, [lmBin, "serve"]))
    await series("the same, not bundled (`dist/` module by module)", () =>
      withoutBundle(() => untilListening(process.execPath, [lmBin, "serve"])))
    await series("`npm run lm -- api-keys list` (PGlite folder, server stopped)", async () =>
      (await timed(npm, ["run", "lm", "--", "api-keys", "list"], env)).millis)
    await series("`node apps/server/dist/bin/lm.js api-keys list` (PGlite folder, server stopped)", async () =>
      (await timed(process.execPath, [lmBin, "api-keys", "list"], env)).millis)
    // Commands against a running server (LM_URL, the command line's usual mode): the command's own start and one
    // request; the server's store does not matter (memory here).
    const auth = bootstrapCredentials()
    const running = await startListening([lmBin, "serve"], bundledServerEnv(auth, { LM_STORAGE: "memory" }))
    try {
      const urlEnv = childEnv({
        LM_URL: new URL(running.base).origin,
        LM_CONSUMER_KEY: auth.consumerKey,
        LM_CONSUMER_SECRET: auth.consumerSecret,
        PATH: env.PATH!
      })
      await series("`npm run lm -- licenses list` against a running server (`LM_URL`)", async () =>
        (await timed(npm, ["run", "lm", "--", "licenses", "list"], urlEnv)).millis)
      await series("`node apps/server/dist/bin/lm.js licenses list` against a running server (`LM_URL`)", async () =>
        (await timed(process.execPath, [lmBin, "licenses", "list"], urlEnv)).millis)
      await series("the same, not bundled (`dist/` module by module)", () =>
        withoutBundle(async () => (await timed(process.execPath, [lmBin, "licenses", "list"], urlEnv)).millis))
      await series("`node apps/server/dist/bin/lm.js --version`", async () => (await timed(process.execPath, [lmBin, "--version"], urlEnv)).millis)
      await series("the same, not bundled (`dist/` module by module)", () =>
        withoutBundle(async () => (await timed(process.execPath, [lmBin, "--version"], urlEnv)).millis))
    } finally {
      await running.stop()
    }
    const databaseUrl = process.env.DATABASE_URL ?? ""
    if (databaseUrl !== "") {
      const database = await freshPostgresDatabase(databaseUrl, "startup")
      const pgEnv = childEnv({ DATABASE_URL: database.url, PORT: "0", HOST: "127.0.0.1", PATH: env.PATH! })
      const server = await startListening([lmBin, "serve"], pgEnv)
      try {
        await series("`npm run lm -- api-keys list` (PostgreSQL, a server running on it)", async () =>
          (await timed(npm, ["run", "lm", "--", "api-keys", "list"], pgEnv)).millis)
      } finally {
        await server.stop()
        await database.drop()
      }
    }
  } finally {
    await data.remove()
  }
  return markdownTable(["what", "ms (median)", "min–max", "load average after"], rows)
}

// ---------------------------------------------------------------------------------------------------------------

const args = process.argv.slice(2)
// Other benches import this file for its profile readers (`summarise`, `readProfile`): then it runs nothing.
if (process.argv[1] !== fileURLToPath(import.meta.url)) {
  // Imported.
} else if (args[0] === "analyze") {
  // Folders a profiled run left (their profiles and run.json), or a profile file and a request count.
  const targets = args.slice(1)
  if (targets.length > 0 && targets.every((t) => fs.existsSync(path.join(t, "run.json")))) {
    const read = targets.map((t) => JSON.parse(fs.readFileSync(path.join(t, "run.json"), "utf8")) as MeasuredRun)
    if (read[0]?.scenario === "activate") unit = "cycle"
    const runs = targets.map((t, i) => analyseRun(t, read[i]!))
    console.log([`### Steps of ${unit === "req" ? "a validate, µs per request" : "an activate+deactivate cycle, µs per cycle"}`, "", stepsSideBySide(runs), "", ...runs.flatMap((r) => [r.text, ""])].join("\n"))
  } else {
    const requests = Number(targets[1])
    if (targets.length !== 2 || !(requests > 0)) {
      throw new Error("usage: node bench/profile.ts analyze <folder with run.json>… | <file.cpuprofile> <requests>")
    }
    console.log(tables(summarise(readProfile(targets[0]!)), requests))
  }
} else {
  const parts = args.filter((a) => a === "validate" || a === "activate" || a === "startup")
  const runValidate = parts.length === 0 || parts.includes("validate")
  const runActivate = parts.includes("activate")
  const runStartup = parts.length === 0 || parts.includes("startup")
  const keep = process.env.PROFILE_DIR !== undefined && process.env.PROFILE_DIR !== ""
  const folder = keep ? path.resolve(process.env.PROFILE_DIR!) : fs.mkdtempSync(path.join(os.tmpdir(), "lm-bench-profile-"))
  const out: Array<string> = [
    `## Profile of ${new Date().toISOString()}`,
    "",
    `Command: \`${nodeArgs.length === 0 ? "" : `PROFILE_NODE_ARGS="${nodeArgs.join(" ")}" `}node bench/profile.ts ${args.join(" ")}\`; ${machineLine()}; load average ${loadAverage()} at the start.`,
    ""
  ]
  try {
    if (runValidate) {
      ensureWrk(progress)
      const runs: Array<Profiled> = []
      for (const store of (process.env.PROFILE_STORES ?? "floor,memory,pglite").split(",").map((s) => s.trim())) {
        if (storeEnvs[store] === undefined) throw new Error(`PROFILE_STORES: unknown store ${store}`)
        runs.push(await profileRun(store, "validate", folder))
      }
      out.push("### Steps of a validate, µs per request", "", stepsSideBySide(runs), "", ...runs.flatMap((r) => [r.text, ""]))
    }
    if (runActivate) {
      ensureWrk(progress)
      unit = "cycle"
      const runs: Array<Profiled> = []
      for (const store of (process.env.PROFILE_STORES ?? "floor,pglite,postgres").split(",").map((s) => s.trim())) {
        if (storeEnvs[store] === undefined) throw new Error(`PROFILE_STORES: unknown store ${store}`)
        runs.push(await profileRun(store, "activate", path.join(folder, "activate")))
      }
      out.push("### Steps of an activate+deactivate cycle, µs per cycle", "", stepsSideBySide(runs), "", ...runs.flatMap((r) => [r.text, ""]))
      unit = "req"
    }
    if (runStartup) out.push("### Start-up and commands", "", await startup(), "")
  } finally {
    if (!keep) fs.rmSync(folder, { recursive: true, force: true })
    else progress(`profiles kept in ${folder}`)
  }
  out.push(`Load average at the end: ${loadAverage()}.`)
  console.log(out.join("\n"))
}
