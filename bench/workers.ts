/**
 * `DATABASE_URL=… node bench/workers.ts` (after `npm run build`): throughput of `lm serve` with `LM_WORKERS=1`
 * and `LM_WORKERS=2` on PostgreSQL (issue 32, "Every core"), with wrk (one thread, `BENCH_CONNECTIONS`).
 *
 * Both servers run at once on one fresh database (64 licenses, one machine active on each), rate limits on (limits
 * no load reaches) and the event log on, as in the quick bench. After a warm-up of each, `BENCH_RUNS` pairs of
 * `POST /validate` runs alternate: one worker, then two; the figure is the median of the pairs' 2 ÷ 1 ratios, so
 * that both sides of a pair share the machine's background load. wrk itself takes a core while it runs: on a
 * 2-core machine the two workers share the other core with the primary, PostgreSQL and wrk's leftovers.
 *
 * Settings (environment): BENCH_WARMUP (s, default 2), BENCH_DURATION (s per run, default 5), BENCH_RUNS (pairs,
 * default 5), BENCH_CONNECTIONS (default 64), BENCH_WORKERS (the second server's count, default 2).
 */
import * as os from "node:os"
import { fixed, markdownTable, median } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  freshPostgresDatabase,
  limitsOn,
  type Listening,
  lmBin,
  loadAverage,
  machineLine,
  ready,
  seedValidateKeys,
  startListening
} from "./support.ts"
import { ensureWrk, runWrk, validateScript, type WrkRun } from "./wrk.ts"

const settings = {
  warmup: envNumber("BENCH_WARMUP", 2),
  duration: envNumber("BENCH_DURATION", 5),
  pairs: envNumber("BENCH_RUNS", 5),
  connections: envNumber("BENCH_CONNECTIONS", 64),
  workers: envNumber("BENCH_WORKERS", 2)
}
const databaseUrl = process.env.DATABASE_URL ?? ""
if (databaseUrl === "") {
  process.stderr.write("bench/workers.ts: set DATABASE_URL (LM_WORKERS above 1 needs PostgreSQL)\n")
  process.exit(2)
}
const progress = (line: string) => process.stderr.write(`bench workers: ${line}\n`)

const auth = bootstrapCredentials()
const started = new Date()
const loadAtStart = loadAverage()
progress(`${started.toISOString()}; ${machineLine()}; load average ${loadAtStart}`)
ensureWrk(progress)

/** `lm serve` with `count` workers; resolves once every worker listens. */
const serve = async (url: string, count: number): Promise<Listening> => {
  const listening = await startListening([lmBin, "serve"], bundledServerEnv(auth, { DATABASE_URL: url }, { ...limitsOn, LM_WORKERS: String(count) }))
  if (count > 1) {
    for (let i = 0; !new RegExp(`${count} workers listening`).test(listening.output()); i++) {
      if (i > 1800) throw new Error(`the ${count} workers did not all listen:\n${listening.output()}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  await ready(listening.base)
  return listening
}

const database = await freshPostgresDatabase(databaseUrl, "workers")
const servers: Array<Listening> = []
const pairs: Array<{ one: WrkRun; many: WrkRun; load: number }> = []
try {
  // One after the other: the first migrates the database.
  servers.push(await serve(database.url, 1))
  servers.push(await serve(database.url, settings.workers))
  const [one, many] = servers as [Listening, Listening]
  const keys = await seedValidateKeys(one.base, auth, 64)
  const run = (server: Listening, seconds: number) =>
    runWrk({ url: server.base, seconds, script: validateScript, args: [new URL(server.base).pathname, ...keys], connections: settings.connections })
  progress(`warm-up: 1 worker ${fixed((await run(one, settings.warmup)).rps)} req/s, ${settings.workers} workers ${fixed((await run(many, settings.warmup)).rps)} req/s`)
  for (let i = 1; i <= settings.pairs; i++) {
    const a = await run(one, settings.duration)
    const b = await run(many, settings.duration)
    pairs.push({ one: a, many: b, load: os.loadavg()[0]! })
    progress(`pair ${i}: 1 worker ${fixed(a.rps)} req/s (p99 ${fixed(a.p99, 1)} ms), ${settings.workers} workers ${fixed(b.rps)} req/s (p99 ${fixed(b.p99, 1)} ms): × ${fixed(b.rps / a.rps, 2)}`)
  }
} finally {
  for (const server of servers) await server.stop()
  await database.drop()
}

const table = markdownTable(
  ["scenario", "1 worker (median)", `${settings.workers} workers (median)`, "× 1 worker, each pair", "× 1 worker (median)", "p99 ms 1 / N", "non-2xx + errors", "load average (1 min)"],
  [[
    "validate",
    `${fixed(median(pairs.map((p) => p.one.rps)))} req/s`,
    `${fixed(median(pairs.map((p) => p.many.rps)))} req/s`,
    pairs.map((p) => fixed(p.many.rps / p.one.rps, 2)).join(", "),
    `**${fixed(median(pairs.map((p) => p.many.rps / p.one.rps)), 2)}**`,
    `${fixed(median(pairs.map((p) => p.one.p99)), 1)} / ${fixed(median(pairs.map((p) => p.many.p99)), 1)}`,
    String(pairs.reduce((n, p) => n + p.one.non2xx + p.one.errors + p.many.non2xx + p.many.errors, 0)),
    `${Math.min(...pairs.map((p) => p.load)).toFixed(1)}–${Math.max(...pairs.map((p) => p.load)).toFixed(1)}`
  ]]
)
console.log([
  `## LM_WORKERS 1 vs ${settings.workers} on PostgreSQL, ${started.toISOString()}`,
  "",
  `Command: \`DATABASE_URL=… node bench/workers.ts\`; ${machineLine()}; load average ${loadAtStart} at the start, ${loadAverage()} at the end.`,
  `wrk -t1 -c${settings.connections}; ${settings.pairs} pairs of ${settings.duration} s (1 worker, then ${settings.workers}); rate limits on (limits no load reaches), event log on.`,
  "",
  table
].join("\n"))
