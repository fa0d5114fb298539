/**
 * What the benchmark scripts share: starting a server (or the floor) as a child process and reading its address
 * from its start-up line, sampling a process's RSS, small HTTP calls for seeding, throw-away stores (a copy of
 * the PGlite template folder, a fresh database on the PostgreSQL server of `DATABASE_URL`) and statistics.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { MemoryStore } from "@lm/storage-memory"
import { layerOnClient, layerPglite, layerPostgres, layerPostgresStore, PgliteTemplate } from "@lm/storage-pg"
import * as readline from "node:readline"
import type { LoadEvent, LoadSpec, LoadTarget } from "./load.ts"
import { stampFile } from "../apps/server/src/bin/bundled.ts"

/** The repository's root folder. */
export const repoRoot = fileURLToPath(new URL("..", import.meta.url))

/** The bundled server's command line (built by `tsc -b`). */
export const lmBin = path.join(repoRoot, "apps/server/dist/bin/lm.js")

/** The stamp of `lm`'s bundle (`apps/server/bundle.ts`): while it is set aside, `lm` runs `dist/` module by module. */
const bundleStamp = path.join(repoRoot, "apps/server/dist/bundle", stampFile)

/** Fails unless `lm` is bundled (`npm run build`, `npm run bench`). */
export const requireBundle = (): void => {
  if (!fs.existsSync(bundleStamp)) throw new Error("lm is not bundled: run `npm run build` (or `node apps/server/bundle.ts`)")
}

/** Runs `measure` with `lm`'s bundle set aside (`lm` as after a `tsc -b` without bundling), then puts it back. */
export const withoutBundle = async <A>(measure: () => Promise<A>): Promise<A> => {
  fs.renameSync(bundleStamp, `${bundleStamp}.aside`)
  try {
    return await measure()
  } finally {
    fs.renameSync(`${bundleStamp}.aside`, bundleStamp)
  }
}

/** A number from the environment, or `fallback` when unset or empty. */
export const envNumber = (name: string, fallback: number): number => {
  const text = process.env[name]
  if (text === undefined || text.trim() === "") return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: expected a non-negative number, got ${text}`)
  return value
}

/** A running child process that printed `Listening on <url>`. */
export interface Listening {
  readonly pid: number
  /** The URL of the start-up line, e.g. `http://127.0.0.1:41234/api/lm/v1`. */
  readonly base: string
  /** Everything the process printed so far (the last 64 KiB). */
  readonly output: () => string
  /** SIGTERM, then SIGKILL after `graceMillis`; resolves once the process has exited. */
  readonly stop: (graceMillis?: number) => Promise<void>
}

/** Environment variables that pick the server's store: removed before each configuration sets its own. */
const storeVariables = ["LM_STORAGE", "DATABASE_URL", "LM_DATA_DIR"]

/** The environment of a child: ours without store settings, with `extra` on top. */
export const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of storeVariables) delete env[name]
  return { ...env, ...extra }
}

/** Resolves when `child` has exited (at once if it already has). */
const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once("exit", () => resolve()))

/**
 * Starts `node <args>` and waits for its `Listening on http://…` line (the bundled server's start-up log and the
 * floor both print one). Fails with the process's output when it exits first or does not listen in time.
 * `wrapper` runs node under another program (`valgrind …`), which must keep node's process id.
 */
export const startListening = (
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv,
  timeoutMillis = 180_000,
  wrapper: ReadonlyArray<string> = []
): Promise<Listening> =>
  new Promise((resolve, reject) => {
    const [command, ...wrapperArgs] = [...wrapper, process.execPath]
    const child = spawn(command!, [...wrapperArgs, ...args], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let settled = false
    const stop = async (graceMillis = 30_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMillis)
      await exited(child)
      clearTimeout(timer)
    }
    const fail = (message: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      void stop(1_000)
      reject(new Error(`${message}\n--- output of node ${args.join(" ")} ---\n${output}`))
    }
    const timer = setTimeout(() => fail(`no "Listening on" line within ${timeoutMillis} ms`), timeoutMillis)
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-65_536)
      const match = /Listening on (http:\/\/[^\s"]+)/.exec(output)
      if (match !== null && !settled) {
        settled = true
        clearTimeout(timer)
        resolve({ pid: child.pid!, base: match[1]!, output: () => output, stop })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code, signal) => fail(`exited (${signal ?? code}) before listening`))
    child.once("error", (error) => fail(String(error)))
  })

/** Runs `node <args>` to completion; its stdout is the result; fails with its output on a non-zero exit. */
export const runNode = (
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv,
  options: { readonly showProgress?: boolean } = {}
): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let output = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      output += chunk.toString("utf8")
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (options.showProgress === true) process.stderr.write(chunk)
    })
    child.once("error", reject)
    child.once("exit", (code, signal) =>
      code === 0 ? resolve(stdout) : reject(new Error(`node ${args.join(" ")} exited (${signal ?? code}):\n${output}`)))
  })

/**
 * Runs `load.ts` (autocannon) as its own process on `spec` (handed over in a temporary file), calling `onEvent`
 * for each line it prints; resolves when it exits cleanly.
 */
export const runLoad = async (spec: LoadSpec, onEvent: (event: LoadEvent) => void): Promise<void> => {
  const folder = await fs.promises.mkdtemp(path.join(os.tmpdir(), "lm-bench-load-"))
  const file = path.join(folder, "spec.json")
  await fs.promises.writeFile(file, JSON.stringify(spec))
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(repoRoot, "bench/load.ts"), file], {
        cwd: repoRoot,
        stdio: ["ignore", "pipe", "inherit"]
      })
      readline.createInterface({ input: child.stdout! }).on("line", (line) => onEvent(JSON.parse(line) as LoadEvent))
      child.once("error", reject)
      child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`load.ts exited with ${code}`))))
    })
  } finally {
    await fs.promises.rm(folder, { recursive: true, force: true })
  }
}

/** The resident set size of a process in MiB (`VmRSS` of /proc/<pid>/status), or NaN when it is gone. */
export const rssMiB = (pid: number): number => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
    return match === null ? Number.NaN : Number(match[1]) / 1024
  } catch {
    return Number.NaN
  }
}

/** Samples a process's RSS every `everyMillis` until stopped; `stop` returns the peak and the last sample. */
export const sampleRss = (pid: number, everyMillis = 200) => {
  let peak = rssMiB(pid)
  let last = peak
  const timer = setInterval(() => {
    last = rssMiB(pid)
    if (last > peak || Number.isNaN(peak)) peak = last
  }, everyMillis)
  return {
    stop: (): { readonly peak: number; readonly last: number } => {
      clearInterval(timer)
      last = rssMiB(pid)
      if (last > peak) peak = last
      return { peak, last }
    }
  }
}

/** A `read_write` API key for `LM_BOOTSTRAP_CONSUMER_*` (CONTRACT §2 format). */
export const bootstrapCredentials = () => ({
  consumerKey: `ck_${randomBytes(20).toString("hex")}`,
  consumerSecret: `cs_${randomBytes(20).toString("hex")}`
})

/** The answer of {@link call}. */
export interface Answer {
  readonly status: number
  readonly body: any
}

/** One JSON request to the API (`path` relative to the API base), with HTTP Basic when `auth` is given. */
export const call = async (
  base: string,
  method: string,
  route: string,
  body?: unknown,
  auth?: { readonly consumerKey: string; readonly consumerSecret: string }
): Promise<Answer> => {
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (auth !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${auth.consumerKey}:${auth.consumerSecret}`).toString("base64")}`
  }
  const response = await fetch(`${base}${route}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed }
}

/** Waits until the server answers its health check (the store is open before it listens, but be sure). */
export const ready = async (base: string) => {
  for (let attempt = 0; attempt < 100; attempt++) {
    const answer = await call(base, "GET", "/health").catch(() => undefined)
    if (answer?.status === 200) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${base}/health never answered 200`)
}

let wrkFound: boolean | undefined

/** Whether `wrk` runs on this machine (looked up once). */
export const wrkInstalled = (): boolean => (wrkFound ??= spawnSync("wrk", ["--version"]).error === undefined)

let postScripts: string | undefined

/**
 * `seconds` of POST `body` to `url` on `connections` connections: wrk (`-t1`) when installed, else load.ts
 * (autocannon). Responses per second, bad answers (non-2xx, errors, timeouts) and the responses counted.
 */
export const postLoad = async (options: {
  readonly url: string
  readonly body: string
  readonly seconds: number
  readonly connections: number
}): Promise<{ rps: number; bad: number; responses: number }> => {
  const { body, connections, seconds, url } = options
  if (wrkInstalled()) {
    if (postScripts === undefined) {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), "lm-bench-post-"))
      process.on("exit", () => fs.rmSync(folder, { recursive: true, force: true }))
      postScripts = folder
    }
    const script = path.join(postScripts, `${createHash("sha256").update(body).digest("hex").slice(0, 16)}.lua`)
    if (!fs.existsSync(script)) {
      fs.writeFileSync(script, `wrk.method = "POST"\nwrk.body = '${body}'\nwrk.headers["Content-Type"] = "application/json"\n`)
    }
    const { stdout: output } = await promisify(execFile)("wrk", ["-t1", `-c${connections}`, `-d${seconds}s`, "-s", script, url])
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? Number.NaN)
    const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0)
    const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
    const socketErrors = errors === null ? 0 : errors.slice(1).reduce((n, e) => n + Number(e), 0)
    const responses = Number(/(\d+) requests in/.exec(output)?.[1] ?? Number.NaN)
    return { rps, bad: non2xx + socketErrors, responses }
  }
  const target: LoadTarget = { origin: new URL(url).origin, loops: [[{ path: new URL(url).pathname, body }]] }
  let run = { rps: Number.NaN, bad: 0, responses: Number.NaN }
  await runLoad({ targets: [target], connections, warmupSeconds: 0, durationSeconds: seconds, runs: 1 }, (event) => {
    if (event.event === "run") {
      const f = event.figures
      const bad = Object.entries(f.statuses).filter(([s]) => !s.startsWith("2")).reduce((n, [, c]) => n + c, 0)
      run = { rps: f.rps, bad: bad + f.errors + f.timeouts, responses: f.responses }
    }
  })
  return run
}

/**
 * The environment of a bundled server (`lm serve`): `store` picks its store, on a free port of 127.0.0.1, with
 * `auth` as its bootstrap API key, rate limits off unless `extra` turns them on (see {@link limitsOn}).
 */
export const bundledServerEnv = (
  auth: { readonly consumerKey: string; readonly consumerSecret: string },
  store: Record<string, string>,
  extra: Record<string, string> = {}
) =>
  childEnv({
    ...store,
    PORT: "0",
    HOST: "127.0.0.1",
    LM_BOOTSTRAP_CONSUMER_KEY: auth.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: auth.consumerSecret,
    LM_RATE_LIMIT: "off",
    ...extra
  })

/**
 * Rate limits on, so high that nothing is refused (a load comes from one address): settings that measure what
 * the limiter costs, buckets, rounds with the shared store and all.
 */
export const limitsOn: Record<string, string> = {
  LM_RATE_LIMIT: "on",
  LM_RATE_LIMIT_PER_IP: "1000000000",
  LM_RATE_LIMIT_PER_KEY: "1000000000",
  LM_RATE_LIMIT_PER_API_KEY: "1000000000"
}

/** Like {@link call}, but fails unless the status is `expected`. */
export const expectStatus = async (
  expected: number | ReadonlyArray<number>,
  ...args: Parameters<typeof call>
): Promise<Answer> => {
  const answer = await call(...args)
  const ok = typeof expected === "number" ? answer.status === expected : expected.includes(answer.status)
  if (!ok) {
    throw new Error(`${args[1]} ${args[2]}: expected ${expected}, got ${answer.status} ${JSON.stringify(answer.body)}`)
  }
  return answer
}

/** A temporary data folder holding an empty (unmigrated) PGlite database: a copy of the PGlite template. */
export const pgliteDataDir = async (): Promise<{ readonly dir: string; readonly remove: () => Promise<void> }> => {
  const template = await Effect.runPromise(PgliteTemplate.templateDataDir)
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "lm-bench-pglite-"))
  await fs.promises.cp(template, dir, { recursive: true })
  return { dir, remove: () => fs.promises.rm(dir, { recursive: true, force: true }) }
}

/** Runs SQL statements, one after the other, on the database of `url` (PostgreSQL, or `pglite:<data folder>`). */
export const runSql = (url: string, statements: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      for (const statement of statements) yield* sql.unsafe(statement)
    }).pipe(Effect.provide(url.startsWith("pglite:") ? layerPglite({ dataDir: url.slice(7), thread: "main" }) : layerPostgres({ url, maxConnections: 1 })), Effect.scoped)
  )

/** The rows of one query on the PostgreSQL server of `url`. */
export const querySql = (url: string, statement: string): Promise<ReadonlyArray<Record<string, unknown>>> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      return (yield* sql.unsafe(statement)) as ReadonlyArray<Record<string, unknown>>
    }).pipe(Effect.provide(layerPostgres({ url, maxConnections: 1 })), Effect.scoped)
  )

let databasesMade = 0

/** A new, empty database on the PostgreSQL server of `url`; `drop` removes it (closing its connections). */
export const freshPostgresDatabase = async (
  url: string,
  label: string
): Promise<{ readonly url: string; readonly name: string; readonly drop: () => Promise<void> }> => {
  const name = `lm_bench_${label}_${process.pid}_${Date.now()}_${++databasesMade}`
  await runSql(url, [`CREATE DATABASE ${name}`])
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return {
    url: parsed.toString(),
    name,
    drop: () => runSql(url, [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`])
  }
}

/**
 * The settings of a bundled server's store named `name`: `memory`, or a fresh database on the PostgreSQL server of
 * `databaseUrl` (`label` names it) that `cleanup` drops.
 */
export const serverStore = async (
  name: string,
  databaseUrl: string,
  label: string
): Promise<{ readonly store: Record<string, string>; readonly cleanup: () => Promise<void> }> => {
  if (name === "memory") return { store: { LM_STORAGE: "memory" }, cleanup: async () => {} }
  const database = await freshPostgresDatabase(databaseUrl, label)
  return { store: { DATABASE_URL: database.url }, cleanup: database.drop }
}

/** The stores the metrics benchmarks measure: `BENCH_METRICS_CONFIGS`, a comma list of memory and postgres. */
export const metricsConfigs = (): Array<string> =>
  (process.env.BENCH_METRICS_CONFIGS ?? "memory,postgres").split(",").map((c) => c.trim())

/** Node, CPU and core count, for the heading of a result. */
export const machineLine = (): string => {
  const cpus = os.cpus()
  return `node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown cpu"}, ${
    Math.round(os.totalmem() / 2 ** 30)
  } GiB, ${os.platform()} ${os.release()}`
}

/**
 * In process: runs `op` in `workers` fibers until `durationSeconds` have passed; operations per second. `op` gets
 * the worker's number.
 */
export const throughput = <E, R>(
  durationSeconds: number,
  workers: number,
  op: (worker: number) => Effect.Effect<unknown, E, R>
) =>
  Effect.gen(function*() {
    let count = 0
    const started = performance.now()
    const deadline = started + durationSeconds * 1000
    const worker = (w: number) =>
      Effect.gen(function*() {
        while (performance.now() < deadline) {
          yield* op(w)
          count++
        }
      })
    yield* Effect.forEach(Array.from({ length: workers }, (_, i) => i), worker, { concurrency: "unbounded", discard: true })
    return count / ((performance.now() - started) / 1000)
  })

/** A store for the in-process benchmarks: its layer, opened on demand, and what to remove after. */
export interface InProcessStore {
  readonly name: string
  readonly open: () => Promise<{ readonly layer: Layer.Layer<any, unknown>; readonly cleanup: () => Promise<void> }>
}

/**
 * The stores of the in-process benchmarks: memory, PGlite (in memory, loaded from the template) and, when
 * `databaseUrl` is given, a fresh database on that PostgreSQL server (`label` names it; dropped by `cleanup`).
 */
export const inProcessStores = (databaseUrl: string, label: string, postgresName = "postgres"): Array<InProcessStore> => [
  { name: "memory", open: async () => ({ layer: MemoryStore.layer, cleanup: async () => {} }) },
  {
    name: "pglite",
    open: async () => ({ layer: layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporary)), cleanup: async () => {} })
  },
  ...(databaseUrl === "" ? [] : [{
    name: postgresName,
    open: async () => {
      const database = await freshPostgresDatabase(databaseUrl, label)
      return { layer: layerPostgresStore({ url: database.url }), cleanup: database.drop }
    }
  }])
]

/**
 * The licenses to validate: `count` licenses of 64 seats, each with fingerprint `validate-i` activated (so
 * validate answers an active license with one seat held, as the floor does); checks that validate answers
 * `valid` for the first. Returns their keys.
 */
export const seedValidateKeys = async (
  base: string,
  auth: { readonly consumerKey: string; readonly consumerSecret: string },
  count: number
): Promise<Array<string>> => {
  const keys: Array<string> = []
  const one = async (i: number) => {
    const key = (await expectStatus(201, base, "POST", "/licenses", { max_activations: 64 }, auth)).body.data.license_key as string
    await expectStatus(201, base, "POST", "/activate", { license_key: key, fingerprint: `validate-${i}` })
    keys[i] = key
  }
  // Eight at a time: seeding is not measured, and one at a time takes seconds on a busy machine.
  for (let i = 0; i < count; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => one(i + j)))
  }
  const answer = await expectStatus(200, base, "POST", "/validate", { license_key: keys[0] })
  if (answer.body.data.valid !== true) throw new Error(`validate of a seeded license is not valid: ${JSON.stringify(answer.body)}`)
  return keys
}

/** A new license on the server of `base` and validate's body for it; fails unless validate answers `valid`. */
export const validateBodyOfNewLicense = async (
  base: string,
  auth: { readonly consumerKey: string; readonly consumerSecret: string }
): Promise<string> => {
  const key = (await expectStatus(201, base, "POST", "/licenses", {}, auth)).body.data.license_key as string
  const answer = await expectStatus(200, base, "POST", "/validate", { license_key: key })
  if (answer.body.data.valid !== true) throw new Error(`validate of a new license is not valid: ${JSON.stringify(answer.body)}`)
  return JSON.stringify({ license_key: key })
}

/** The load average (1, 5, 15 min) as `a, b, c`. */
export const loadAverage = (): string => os.loadavg().map((l) => l.toFixed(2)).join(", ")
