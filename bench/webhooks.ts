/**
 * Activate throughput with three webhooks registered against none (issue 16: the goal is ≥ 0.9×), and how fast
 * the deliveries it causes go out.
 *
 * For each store (memory, PGlite, and PostgreSQL when DATABASE_URL is set) two `lm serve` processes start with the
 * same settings: "none" has no webhook, "hooks" has three webhooks subscribed to `*`, all pointing at a local
 * node:http receiver (bench/receiver.ts, its own process at `nice -n 19`) that answers 200. Both are seeded with one license of one seat per
 * connection. Then, `BENCH_RUNS` times: wait until every delivery of "hooks" is in (the receiver got as many
 * requests as its delivery logs hold), a run of activate+deactivate cycles on "none", at once the same run on
 * "hooks".
 * Every cycle causes two events (machine.activated, machine.deactivated), so six deliveries. The ratio is the
 * median of the per-pair ratios of req/s; deliveries/s are counted from the start of a "hooks" run (its
 * warm-up included) until its deliveries are all in.
 *
 * Then, on the SQL stores, the figure: BENCH_EVENTS events (default 10,000; 0 skips) delivered from a
 * full outbox (see `drainRows`).
 *
 * Settings (environment): BENCH_DURATION (s per run, default 10; 0 skips the throughput pairs), BENCH_RUNS (default 3), BENCH_CONNECTIONS
 * (default 32), BENCH_CONFIGS (comma list of memory, pglite, postgres; default all that can run). Run after
 * `npx tsc -b`: `node bench/webhooks.ts`. Nothing is asserted.
 */
import { spawn } from "node:child_process"
import path from "node:path"
import readline from "node:readline"
import type { LoadSpec, RunFigures } from "./load.ts"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  expectStatus,
  freshPostgresDatabase,
  type Listening,
  lmBin,
  machineLine,
  pgliteDataDir,
  runLoad,
  runSql,
  startListening
} from "./support.ts"

const settings = {
  duration: envNumber("BENCH_DURATION", 10),
  runs: envNumber("BENCH_RUNS", 3),
  connections: envNumber("BENCH_CONNECTIONS", 32),
  events: envNumber("BENCH_EVENTS", 10_000),
  databaseUrl: process.env.DATABASE_URL ?? ""
}
const configs = (process.env.BENCH_CONFIGS ?? `memory,pglite${settings.databaseUrl === "" ? "" : ",postgres"}`).split(",").map((c) => c.trim())
const progress = (line: string) => process.stderr.write(`bench: ${line}\n`)
const auth = bootstrapCredentials()

/**
 * The receiver (bench/receiver.ts) in its own process at the lowest CPU priority, standing in for a server on
 * another machine: on these two cores it would otherwise take CPU from the server under test.
 */
const receiverProcess = spawn("nice", ["-n", "19", process.execPath, path.join(import.meta.dirname, "receiver.ts")], {
  stdio: ["ignore", "pipe", "inherit"]
})
process.once("exit", () => receiverProcess.kill("SIGTERM"))
const receiverPort = await new Promise<number>((resolve, reject) => {
  readline.createInterface({ input: receiverProcess.stdout! }).once("line", (line) => resolve((JSON.parse(line) as { port: number }).port))
  receiverProcess.once("exit", (code) => reject(new Error(`the receiver exited with ${code}`)))
})
const receiverUrl = `http://127.0.0.1:${receiverPort}/hook`

/** What the receiver has got so far: deliveries, when the last arrived (epoch ms), connections opened to it. */
const received = async (): Promise<{ count: number; last: number; connections: number }> =>
  (await fetch(`http://127.0.0.1:${receiverPort}/stats`)).json() as Promise<{ count: number; last: number; connections: number }>

/** Resolves once the receiver has got nothing for `quietMillis`. */
const idle = async (quietMillis = 1_000) => {
  while (Date.now() - (await received()).last < quietMillis) await new Promise((r) => setTimeout(r, 100))
}

/**
 * Resolves once the "hooks" server has delivered everything: the receiver was quiet for a second (longer than the
 * 0.5 s poll, so nothing waits in the outbox) and each webhook's newest delivery is delivered (every delivery is
 * answered 200). Not the delivery logs' totals: the memory store keeps only a window of finished deliveries.
 */
const drained = async (base: string, hookIds: ReadonlyArray<number>) => {
  for (;;) {
    await idle()
    let done = true
    for (const id of hookIds) {
      const newest = (await expectStatus(200, base, "GET", `/webhooks/${id}/deliveries?per_page=1`, undefined, auth)).body.data.deliveries[0]
      if (newest !== undefined && newest.status !== "delivered") done = false
    }
    if (done) return
    await new Promise((r) => setTimeout(r, 500))
  }
}

const serverEnv = (store: Record<string, string>) =>
  bundledServerEnv(auth, store, { LM_WEBHOOK_ALLOW_INSECURE: "1", LM_WEBHOOK_ALLOW_PRIVATE: "1" })


interface Started {
  readonly listening: Listening
  /** The store's environment variables, to start another server on it. */
  readonly store: Record<string, string>
  /** The store for `runSql` (memory: none). */
  readonly sqlUrl: string | undefined
  readonly cleanup: () => Promise<void>
}

const start = async (config: string, label: string): Promise<Started> => {
  const on = async (store: Record<string, string>, sqlUrl: string | undefined, cleanup: () => Promise<void>): Promise<Started> => ({
    listening: await startListening([lmBin, "serve"], serverEnv(store)),
    store,
    sqlUrl,
    cleanup
  })
  switch (config) {
    case "memory":
      return on({ LM_STORAGE: "memory" }, undefined, async () => {})
    case "pglite": {
      const data = await pgliteDataDir()
      return on({ LM_DATA_DIR: data.dir }, `pglite:${data.dir}`, data.remove)
    }
    case "postgres": {
      const database = await freshPostgresDatabase(settings.databaseUrl, `hooks_${label}`)
      return on({ DATABASE_URL: database.url }, database.url, database.drop)
    }
    default:
      throw new Error(`unknown config ${config}`)
  }
}

/** One run of activate+deactivate cycles on a server (connection i cycles fingerprint `cycle-i` on `key`). */
const cycles = async (listening: Listening, key: string, warmupSeconds: number): Promise<RunFigures> => {
  const url = new URL(listening.base)
  const cycle = (fingerprint: string) => [
    { path: `${url.pathname}/activate`, body: JSON.stringify({ license_key: key, fingerprint }) },
    { path: `${url.pathname}/deactivate`, body: JSON.stringify({ license_key: key, fingerprint }) }
  ]
  const spec: LoadSpec = {
    targets: [{ origin: url.origin, loops: Array.from({ length: settings.connections }, (_, i) => cycle(`cycle-${i}`)) }],
    connections: settings.connections,
    warmupSeconds,
    durationSeconds: settings.duration,
    runs: 1
  }
  let figures: RunFigures | undefined
  await runLoad(spec, (event) => {
    if (event.event === "run") figures = event.figures
  })
  return figures!
}

interface Row {
  readonly config: string
  readonly none: Array<number>
  readonly hooks: Array<number>
  readonly ratios: Array<number>
  readonly deliveriesPerSecond: Array<number>
  non2xx: number
}

const rows: Array<Row> = []
for (const config of settings.duration > 0 ? configs : []) {
  progress(`${config}: starting two servers`)
  const none = await start(config, "none")
  const hooks = await start(config, "hooks")
  try {
    const seed = async (listening: Listening) =>
      (await expectStatus(201, listening.base, "POST", "/licenses", { max_activations: settings.connections }, auth)).body.data.license_key as string
    const noneKey = await seed(none.listening)
    const hooksKey = await seed(hooks.listening)
    const hookIds: Array<number> = []
    for (let i = 0; i < 3; i++) {
      hookIds.push(
        (await expectStatus(201, hooks.listening.base, "POST", "/webhooks", { name: `bench ${i}`, url: receiverUrl, events: ["*"] }, auth)).body.data.id
      )
    }
    const row: Row = { config, none: [], hooks: [], ratios: [], deliveriesPerSecond: [], non2xx: 0 }
    for (let run = 1; run <= settings.runs; run++) {
      await drained(hooks.listening.base, hookIds)
      const a = await cycles(none.listening, noneKey, run === 1 ? 3 : 1)
      const before = await received()
      const started = Date.now()
      const b = await cycles(hooks.listening, hooksKey, run === 1 ? 3 : 1)
      // Deliveries caused by the warm-up arrive too: counted from the start of the warm-up until all are in.
      await drained(hooks.listening.base, hookIds)
      const after = await received()
      const seconds = (after.last - started) / 1000
      const delivered = after.count - before.count
      row.none.push(a.rps)
      row.hooks.push(b.rps)
      row.ratios.push(b.rps / a.rps)
      row.deliveriesPerSecond.push(delivered / seconds)
      for (const f of [a, b]) {
        row.non2xx += Object.entries(f.statuses).filter(([s]) => !s.startsWith("2")).reduce((n, [, c]) => n + c, 0)
      }
      progress(`${config} run ${run}: none ${fixed(a.rps)} req/s, three webhooks ${fixed(b.rps)} req/s (× ${fixed(b.rps / a.rps, 2)}), ` +
        `${delivered} deliveries in ${fixed(seconds, 1)} s on ${after.connections - before.connections} new connections`)
    }
    rows.push(row)
  } finally {
    if (process.env.BENCH_DEBUG === "1") process.stderr.write(hooks.listening.output().slice(-4000))
    await none.listening.stop()
    await hooks.listening.stop()
    await none.cleanup()
    await hooks.cleanup()
  }
}
/**
 * The figure: `BENCH_EVENTS` events (default 10,000) delivered to the local receiver. A server on a fresh
 * store registers one webhook on `*` and stops; the events are then written into its outbox directly (SQL, not
 * yet dispatched), and a server started again on the store fans them out and delivers them. Timed from its
 * "Listening" line until the receiver has them all. SQL stores only (the memory store ends with its process).
 */
const drainRows: Array<ReadonlyArray<string>> = []
if (settings.events > 0) {
  for (const config of configs.filter((c) => c !== "memory")) {
    progress(`${config}: ${settings.events} events to one webhook`)
    const first = await start(config, "drain")
    try {
      await expectStatus(201, first.listening.base, "POST", "/webhooks", { name: "drain", url: receiverUrl, events: ["*"] }, auth)
      await first.listening.stop()
      await runSql(first.sqlUrl!, [
        `INSERT INTO lm_events (type, occurred_at, data) SELECT 'license.created', now(), jsonb_build_object('n', g)
         FROM generate_series(1, ${settings.events}) AS g`
      ])
      await idle()
      const before = (await received()).count
      const again = await startListening([lmBin, "serve"], serverEnv(first.store))
      const started = Date.now()
      try {
        let now = await received()
        while (now.count - before < settings.events) {
          await new Promise((r) => setTimeout(r, 50))
          now = await received()
        }
        const count = now.count - before
        const seconds = (now.last - started) / 1000
        drainRows.push([config, String(count), fixed(seconds, 1), fixed(count / seconds)])
        progress(`${config}: ${count} deliveries in ${fixed(seconds, 1)} s`)
      } finally {
        await again.stop()
      }
    } finally {
      await first.listening.stop()
      await first.cleanup()
    }
  }
}
receiverProcess.kill("SIGTERM")

const table = markdownTable(
  ["store", "no webhook (req/s)", "three webhooks (req/s)", "× none (median of pairs)", "deliveries/s", "non-2xx"],
  rows.map((r) => [
    r.config,
    fixed(median(r.none)),
    fixed(median(r.hooks)),
    fixed(median(r.ratios), 2),
    fixed(median(r.deliveriesPerSecond)),
    String(r.non2xx)
  ])
)
process.stdout.write(`${new Date().toISOString()}, ${machineLine()}\n` +
  (rows.length === 0
    ? ""
    : `activate+deactivate, ${settings.connections} connections, ${settings.runs} × ${settings.duration} s per server\n\n${table}\n`) +
  (drainRows.length === 0
    ? ""
    : `\n${settings.events} events in the outbox at start, one webhook, delivered to the local receiver:\n\n` +
      `${markdownTable(["store", "deliveries", "seconds from start", "deliveries/s"], drainRows)}\n`))
