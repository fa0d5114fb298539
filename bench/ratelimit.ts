/**
 * What rate limits cost validate (issue 17: limits on ≥ 0.9 × limits off, same run, on each store). Two parts,
 * `node bench/ratelimit.ts [http] [inprocess]` (default both, in that order):
 *
 * Over HTTP (`http`): per configuration — memory, PGlite, PostgreSQL (`DATABASE_URL`; limits shared through the
 * database, reconciled every 200 ms), memory with limits shared through Redis (`REDIS_URL`, default
 * redis://127.0.0.1:6379) — two bundled servers are started once on the same kind of store (the same database on
 * PostgreSQL; each its own copy of the template on PGlite): one with limits off, one with limits on, so high that
 * nothing is refused. Then `BENCH_RATELIMIT_ROUNDS` (12) pairs of short runs (`BENCH_RATELIMIT_SECONDS`, 3 s) of
 * POST /validate, one against each server, the order alternating pair by pair, so that the machine's load drifts
 * favour neither; ratio = median of the pairs' on ÷ off, with its spread. The load generator is wrk (a compiled
 * one, `BENCH_CONNECTIONS` (32) connections on one thread) when installed, else `load.ts` (autocannon) in its own
 * process. `BENCH_RATELIMIT_TOGETHER=1` loads the two servers of a pair at the same time instead (each its own
 * load generator), meant to let both share whatever else the machine does at that moment (on the loaded 2-core
 * machine of bench/README.md it scattered no less than alternating). Each pair also reads the
 * servers' CPU time per response (/proc), which depends less on what else runs than throughput does. With
 * `BENCH_RATELIMIT_CPU_PROF=<folder>` the limits-on servers write a CPU profile there (`--cpu-prof`), of which the
 * share of the limiter's code is printed: a figure that does not depend on the machine's load.
 *
 * In process (`inprocess`): the engine of the bundled server with limits on, on the same stores. Each round times
 * `Licensing.validate` alone ("off") and the public guard's `RateLimiter.admitPublic` followed by the same
 * validate ("on"), one right after the other, in `BENCH_CONNECTIONS` (32) fibers, each fiber its own client IP
 * and license key; the median of the rounds' ratios is printed. Without HTTP around it the limiter's share of a
 * request is larger than over the wire, so this ratio bounds the over-HTTP one from below. Last, `admitPublic`
 * alone: its time per request, set against the time a request takes over HTTP, gives the share the limiter can
 * take of a request whatever the machine's load.
 *
 * Run: `nice -n 10 node bench/ratelimit.ts` (after `npx tsc -b`). Settings: BENCH_RATELIMIT_SECONDS (per timing,
 * default 3 over HTTP, 1 in process), BENCH_RATELIMIT_ROUNDS (12 over HTTP, 5 in process), BENCH_CONNECTIONS (32),
 * BENCH_WARMUP (5 s per server over HTTP), BENCH_RATELIMIT_TOGETHER, BENCH_RATELIMIT_CPU_PROF, BENCH_RATELIMIT_CONFIGS
 * (comma list of memory, pglite, postgres, redis; default all), DATABASE_URL, REDIS_URL.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, Redacted } from "effect"
import { Engine, Licenses, Licensing, RateLimit, RateLimiter } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerRedisRateLimits } from "../apps/server/src/RedisRateLimits.ts"
import { fixed, markdownTable, median, percentile } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  inProcessStores,
  limitsOn,
  type Listening,
  lmBin,
  machineLine,
  pgliteDataDir,
  ready,
  postLoad,
  startListening,
  throughput,
  wrkInstalled
} from "./support.ts"

const parts = process.argv.slice(2).filter((a) => a === "http" || a === "inprocess")
const runHttp = parts.length === 0 || parts.includes("http")
const runInProcess = parts.length === 0 || parts.includes("inprocess")
const connections = envNumber("BENCH_CONNECTIONS", 32)
const databaseUrl = process.env.DATABASE_URL ?? ""
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const configs = (process.env.BENCH_RATELIMIT_CONFIGS ?? "memory,pglite,postgres,redis").split(",").map((c) => c.trim())
const progress = (line: string) => process.stderr.write(`ratelimit: ${line}\n`)
const loadAverage = () => os.loadavg().map((l) => l.toFixed(2)).join(", ")

// ---------------------------------------------------------------------------------------------------------------
// Over HTTP

/** One over-HTTP configuration: the store settings of its two servers, and what to remove after. */
interface HttpConfig {
  readonly name: string
  readonly open: () => Promise<{
    readonly off: Record<string, string>
    readonly on: Record<string, string>
    readonly cleanup: () => Promise<void>
  }>
}

const httpConfigs: ReadonlyArray<HttpConfig> = [
  {
    name: "memory",
    open: async () => ({ off: { LM_STORAGE: "memory" }, on: { LM_STORAGE: "memory" }, cleanup: async () => {} })
  },
  {
    name: "pglite",
    open: async () => {
      const off = await pgliteDataDir()
      const on = await pgliteDataDir()
      return {
        off: { LM_DATA_DIR: off.dir },
        on: { LM_DATA_DIR: on.dir },
        cleanup: async () => {
          await off.remove()
          await on.remove()
        }
      }
    }
  },
  {
    name: "postgres",
    open: async () => {
      const database = await freshPostgresDatabase(databaseUrl, "rlhttp")
      return { off: { DATABASE_URL: database.url }, on: { DATABASE_URL: database.url }, cleanup: database.drop }
    }
  },
  {
    name: "redis",
    open: async () => ({
      off: { LM_STORAGE: "memory" },
      on: { LM_STORAGE: "memory", LM_REDIS_URL: redisUrl },
      cleanup: async () => {}
    })
  }
]

const httpNames: Record<string, string> = {
  memory: "memory",
  pglite: "PGlite",
  postgres: "PostgreSQL (shared through it)",
  redis: "memory + Redis (shared through it)"
}

const hasWrk = wrkInstalled()

/** A started server and the body of its validate request. */
interface Server {
  readonly listening: Listening
  readonly url: string
  readonly body: string
}

const auth = bootstrapCredentials()

/** Starts a bundled server, creates one license on it and checks that validate answers `valid`. */
const startServer = async (env: NodeJS.ProcessEnv, nodeArgs: ReadonlyArray<string> = []): Promise<Server> => {
  const listening = await startListening([...nodeArgs, lmBin, "serve"], env)
  try {
    await ready(listening.base)
    const key = (await expectStatus(201, listening.base, "POST", "/licenses", {}, auth)).body.data.license_key as string
    const body = JSON.stringify({ license_key: key })
    const answer = await expectStatus(200, listening.base, "POST", "/validate", { license_key: key })
    if (answer.body.data.valid !== true) throw new Error(`validate of a new license is not valid: ${JSON.stringify(answer.body)}`)
    return { listening, url: `${listening.base}/validate`, body }
  } catch (error) {
    await listening.stop(1_000)
    throw error
  }
}

/** One load run: responses per second, how many were not 2xx (or failed), the server's CPU µs per response. */
interface LoadRun {
  readonly rps: number
  readonly bad: number
  readonly cpuMicros: number
}

/** CPU time a process has used so far (user + system), in µs; NaN when it is gone. */
const cpuMicrosOf = (pid: number): number => {
  try {
    // Fields 14 and 15 of /proc/<pid>/stat (after the command name in parentheses), in clock ticks of 10 ms.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}

/** `seconds` of POST /validate against `server`: wrk when installed, else `load.ts` (autocannon). */
const load = async (server: Server, seconds: number): Promise<LoadRun> => {
  const cpuBefore = cpuMicrosOf(server.listening.pid)
  const run = await postLoad({ url: server.url, body: server.body, seconds: seconds, connections })
  return { ...run, cpuMicros: (cpuMicrosOf(server.listening.pid) - cpuBefore) / run.responses }
}

/**
 * Where the limiter's code lives: the domain's buckets and limiter, the HTTP guard, the shared stores' rounds
 * (Redis, PostgreSQL/PGlite repository).
 */
const limiterFiles = /\/(rateLimit|rateLimits|RateLimiter|RateLimits|RedisRateLimits)\.js$/

/**
 * The limiter's share of a CPU profile (`--cpu-prof`): the time of the samples with a frame of `limiterFiles` on
 * their stack, over every sample but idle ones, leaving out the first `skipMillis` (start-up and warm-up: creating
 * the Redis client alone is most of a second). The effect runtime's own work for the guard (running the
 * effect `admitPublic` returns) shows in effect's files, so this is a lower bound.
 */
const limiterShare = (file: string, skipMillis: number): { readonly share: number; readonly seconds: number } => {
  interface ProfileNode {
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string }
    readonly children?: ReadonlyArray<number>
  }
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as {
    readonly nodes: ReadonlyArray<ProfileNode>
    readonly samples: ReadonlyArray<number>
    readonly timeDeltas: ReadonlyArray<number>
  }
  const parent = new Map<number, number>()
  const byId = new Map<number, ProfileNode>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const inLimiter = new Map<number, boolean>()
  const limiterOnStack = (id: number): boolean => {
    const known = inLimiter.get(id)
    if (known !== undefined) return known
    const node = byId.get(id)!
    const up = parent.get(id)
    const result = limiterFiles.test(node.callFrame.url) || (up !== undefined && limiterOnStack(up))
    inLimiter.set(id, result)
    return result
  }
  let busy = 0
  let limiter = 0
  let elapsed = 0
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0
    elapsed += micros
    if (elapsed < skipMillis * 1000 || byId.get(id)!.callFrame.functionName === "(idle)") return
    busy += micros
    if (limiterOnStack(id)) limiter += micros
  })
  return { share: limiter / busy, seconds: busy / 1e6 }
}

interface HttpResult {
  readonly config: string
  readonly off: number
  readonly on: number
  readonly ratio: number
  readonly ratios: ReadonlyArray<number>
  /** Server CPU µs per response, medians, and the median of the pairs' off ÷ on. */
  readonly cpuOff: number
  readonly cpuOn: number
  readonly cpuRatio: number
  readonly bad: number
  readonly load: string
  /** The limiter's share of the limits-on server's CPU profile (with BENCH_RATELIMIT_CPU_PROF). */
  readonly profile?: { readonly share: number; readonly seconds: number }
}

const httpRounds = envNumber("BENCH_RATELIMIT_ROUNDS", 12)
const httpSeconds = envNumber("BENCH_RATELIMIT_SECONDS", 3)
const cpuProfile = process.env.BENCH_RATELIMIT_CPU_PROF === undefined || process.env.BENCH_RATELIMIT_CPU_PROF === ""
  ? ""
  : path.resolve(process.env.BENCH_RATELIMIT_CPU_PROF)
const warmupSeconds = envNumber("BENCH_WARMUP", 5)
/** `BENCH_RATELIMIT_TOGETHER=1`: each pair loads both servers at the same time instead of one after the other. */
const together = process.env.BENCH_RATELIMIT_TOGETHER === "1"

const measureHttp = async (config: HttpConfig): Promise<HttpResult> => {
  const { off: offStore, on: onStore, cleanup } = await config.open()
  const servers: Array<Server> = []
  try {
    // One after the other: on PostgreSQL the first one migrates the shared database.
    const off = await startServer(bundledServerEnv(auth, offStore))
    servers.push(off)
    if (cpuProfile !== "") fs.mkdirSync(cpuProfile, { recursive: true })
    const profile = cpuProfile === "" ? [] : ["--cpu-prof", "--cpu-prof-dir", cpuProfile]
    const onSpawned = performance.now()
    const on = await startServer(bundledServerEnv(auth, onStore, limitsOn), profile)
    servers.push(on)
    progress(`${config.name}: off pid ${off.listening.pid}, on pid ${on.listening.pid}; warming up`)
    await load(off, warmupSeconds)
    await load(on, warmupSeconds)
    const roundsFrom = performance.now() - onSpawned
    const pairs: Array<{ off: LoadRun; on: LoadRun }> = []
    const loads: Array<number> = []
    for (let i = 0; i < httpRounds; i++) {
      let pair: { off: LoadRun; on: LoadRun }
      if (together) {
        // Both at once, each with its own load generator: they share the machine's load of that moment.
        const [a, b] = await Promise.all([load(off, httpSeconds), load(on, httpSeconds)])
        pair = { off: a, on: b }
      } else {
        // Alternating which goes first, so that a drift of the machine's load favours neither.
        const first = i % 2 === 0 ? off : on
        const a = await load(first, httpSeconds)
        const b = await load(first === off ? on : off, httpSeconds)
        pair = first === off ? { off: a, on: b } : { off: b, on: a }
      }
      pairs.push(pair)
      loads.push(os.loadavg()[0]!)
      progress(
        `${config.name} pair ${i + 1}: off ${fixed(pair.off.rps)} req/s, on ${fixed(pair.on.rps)} req/s, on ÷ off ${
          fixed(pair.on.rps / pair.off.rps, 3)
        }; server CPU µs per response off ${fixed(pair.off.cpuMicros)}, on ${fixed(pair.on.cpuMicros)} (load ${loads.at(-1)!.toFixed(2)})`
      )
    }
    const ratios = pairs.map((p) => p.on.rps / p.off.rps)
    let profiled: HttpResult["profile"]
    if (cpuProfile !== "") {
      // The profile is written when the server exits.
      await on.listening.stop()
      const file = fs.readdirSync(cpuProfile).find((name) => name.endsWith(`.${on.listening.pid}.0.001.cpuprofile`))
      if (file !== undefined) {
        profiled = limiterShare(path.join(cpuProfile, file), roundsFrom)
        progress(`${config.name}: limiter share of the limits-on server's CPU profile ${fixed(profiled.share * 100, 2)} % of ${fixed(profiled.seconds, 1)} s of CPU during the pairs`)
      }
    }
    return {
      ...(profiled === undefined ? {} : { profile: profiled }),
      config: httpNames[config.name] ?? config.name,
      off: median(pairs.map((p) => p.off.rps)),
      on: median(pairs.map((p) => p.on.rps)),
      ratio: median(ratios),
      ratios,
      cpuOff: median(pairs.map((p) => p.off.cpuMicros)),
      cpuOn: median(pairs.map((p) => p.on.cpuMicros)),
      cpuRatio: median(pairs.map((p) => p.off.cpuMicros / p.on.cpuMicros)),
      bad: pairs.reduce((n, p) => n + p.off.bad + p.on.bad, 0),
      load: `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`
    }
  } finally {
    for (const server of servers) await server.listening.stop()
    await cleanup()
  }
}

const httpTable = (results: ReadonlyArray<HttpResult>) => {
  const rows = results.map((r) => {
    const sorted = [...r.ratios].sort((a, b) => a - b)
    return [
      r.config,
      fixed(r.off),
      fixed(r.on),
      fixed(r.ratio, 3),
      `${fixed(percentile(sorted, 25), 2)}–${fixed(percentile(sorted, 75), 2)}`,
      `${fixed(sorted[0]!, 2)}–${fixed(sorted.at(-1)!, 2)}`,
      String(r.ratios.filter((x) => x >= 0.9).length) + ` of ${r.ratios.length}`,
      `${fixed(r.cpuOff)} / ${fixed(r.cpuOn)} (${fixed(r.cpuRatio, 3)})`,
      String(r.bad),
      r.load,
      r.profile === undefined ? "–" : `${fixed(r.profile.share * 100, 2)} %`
    ]
  })
  return markdownTable(
    ["store", "off (req/s, median)", "on (req/s, median)", "on ÷ off (median of pairs)", "middle half of pairs", "all pairs", "pairs ≥ 0.9", "server CPU µs per response off / on (off ÷ on, median of pairs)", "non-2xx / errors", "load average (1 min)", "limiter's share of the on server's CPU profile"],
    rows
  )
}

// ---------------------------------------------------------------------------------------------------------------
// In process

const huge = { perMinute: 1_000_000_000 }
const rateLimits: Engine.RateLimitOptions = {
  settings: { ...RateLimit.defaultRateLimitSettings, perIp: huge, perKey: huge, perApiKey: huge },
  syncEveryMillis: 200
}
const inProcessSeconds = envNumber("BENCH_RATELIMIT_SECONDS", 1)
const inProcessRounds = envNumber("BENCH_RATELIMIT_ROUNDS", 5)
const measure = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const limiter = yield* RateLimiter
    const keys: Array<string> = []
    for (let i = 0; i < connections; i++) keys.push((yield* licenses.create({})).license.key)
    const ipOf = (w: number) => `10.0.${w >> 8}.${w & 255}`
    const off = (w: number) => licensing.validate({ licenseKey: keys[w]!, ipAddress: ipOf(w) })
    const on = (w: number) =>
      Effect.andThen(limiter.admitPublic({ endpoint: "validate", ip: ipOf(w), licenseKey: keys[w] }), off(w))
    yield* throughput(inProcessSeconds, connections, off)
    yield* throughput(inProcessSeconds, connections, on)
    const pairs: Array<{ off: number; on: number }> = []
    for (let i = 0; i < inProcessRounds; i++) {
      // Alternating which goes first, so that a drift of the machine's load favours neither.
      const first = i % 2 === 0 ? off : on
      const a = yield* throughput(inProcessSeconds, connections, first)
      const b = yield* throughput(inProcessSeconds, connections, first === off ? on : off)
      pairs.push(first === off ? { off: a, on: b } : { off: b, on: a })
      process.stderr.write(`${store} round ${i + 1}: off ${fixed(pairs[i]!.off)} ops/s, on ${fixed(pairs[i]!.on)} ops/s\n`)
    }
    // The limiter alone (two buckets a request, the rounds with the shared store running beside it).
    const alone = (w: number) => limiter.admitPublic({ endpoint: "validate", ip: ipOf(w), licenseKey: keys[w] })
    yield* throughput(inProcessSeconds, connections, alone)
    const admits = median(yield* Effect.forEach(Array.from({ length: 3 }), () => throughput(inProcessSeconds, connections, alone)))
    return {
      store,
      admits,
      off: median(pairs.map((p) => p.off)),
      on: median(pairs.map((p) => p.on)),
      ratio: median(pairs.map((p) => p.on / p.off)),
      minRatio: Math.min(...pairs.map((p) => p.on / p.off))
    }
  })

const inProcessStoreList = [
  ...inProcessStores(databaseUrl, "ratelimit", "postgres (shared through it)"),
  {
    name: "memory + Redis (shared through it)",
    open: async () => ({
      layer: Layer.merge(MemoryStore.layer, layerRedisRateLimits(Redacted.make(redisUrl))),
      cleanup: async () => {}
    })
  }
]

if (runHttp) {
  const results: Array<HttpResult> = []
  progress(`over HTTP, load generator ${hasWrk ? "wrk" : "load.ts (autocannon)"}; load average ${loadAverage()}`)
  const started = new Date()
  for (const config of httpConfigs.filter((c) => configs.includes(c.name))) {
    if (config.name === "postgres" && databaseUrl === "") {
      progress("postgres: skipped (DATABASE_URL is not set)")
      continue
    }
    results.push(await measureHttp(config))
  }
    console.log(
    `Over HTTP, ${started.toISOString()} to ${new Date().toISOString()}; ${machineLine()}; ${
      hasWrk ? "wrk -t1" : "autocannon"
    } -c${connections} per server, warm-up ${warmupSeconds} s each, ${httpRounds} pairs of ${httpSeconds} s off + ${httpSeconds} s on, ${
      together ? "both at the same time" : "one after the other, order alternating"
    }; load average at the end ${loadAverage()}\n`
  )
  console.log(httpTable(results))
  console.log("")
}

if (runInProcess) {
  const results = []
  for (const store of inProcessStoreList.filter((s) => configs.includes(s.name.startsWith("memory +") ? "redis" : s.name.split(" ")[0]!))) {
    const { layer, cleanup } = await store.open()
    try {
      results.push(
        await Effect.runPromise(
          measure(store.name).pipe(Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0, rateLimits })), Effect.scoped)
        )
      )
    } finally {
      await cleanup()
    }
  }

  console.log(`In process, ${new Date().toISOString()}; ${machineLine()}; ${connections} fibers, ${inProcessRounds} rounds of ${inProcessSeconds} s off + ${inProcessSeconds} s on; load average ${loadAverage()}\n`)
  console.log(markdownTable(
    ["store", "validate, limits off (ops/s)", "limits on (ops/s)", "on ÷ off (median of rounds)", "worst round", "admitPublic alone (ops/s)", "µs per admit"],
    results.map((r) => [r.store, fixed(r.off), fixed(r.on), fixed(r.ratio, 2), fixed(r.minRatio, 2), fixed(r.admits), fixed(1e6 / r.admits, 2)])
  ))
}
