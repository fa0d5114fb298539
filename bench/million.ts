/**
 * Memory of a server holding a million licenses, on PGlite and (when `DATABASE_URL` is set) on PostgreSQL.
 *
 * For each store: a fresh store (a copy of the PGlite template folder; a new database on the server of
 * `DATABASE_URL`, dropped after) is migrated by the server's own `lm migrate`; the licenses are then inserted
 * directly with SQL, in batches (`INSERT … SELECT … FROM generate_series`), followed by `ANALYZE`; then
 * `lm serve` starts on it, and its RSS is read when it listens, after validating a sample of the keys once
 * (every request checked for 200 and `valid`), and at the peak of a load run of validate over that sample
 * (autocannon from a second process; its req/s and latencies are printed too).
 *
 * Key `i` is `XXXX-XXXX-XXXX-XXXX`, the first 16 hex digits of md5(i) upper-cased: computed the same way in SQL
 * and here, so the sample needs no lookup. The licenses are plain (`issued`, 5 seats, no machine).
 *
 * Run: `node bench/million.ts` (after `npx tsc -b`). Settings: BENCH_MILLION_COUNT (default 1,000,000),
 * BENCH_MILLION_SAMPLE (keys validated, default 20,000), BENCH_MILLION_STORES (pglite,postgres),
 * BENCH_DURATION (seconds of the load run, default 10), BENCH_CONNECTIONS (64), BENCH_QUICK=1 (20,000 licenses,
 * a 2,000-key sample, a 2 s run), DATABASE_URL.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { layerPglite } from "@lm/storage-pg"
import type { RunFigures } from "./load.ts"
import { fixed, markdownTable } from "./stats.ts"
import {
  bootstrapCredentials,
  call,
  bundledServerEnv,
  childEnv,
  envNumber,
  freshPostgresDatabase,
  lmBin,
  machineLine,
  pgliteDataDir,
  repoRoot,
  rssMiB,
  runLoad,
  runNode,
  runSql,
  sampleRss,
  startListening
} from "./support.ts"

const quick = process.env.BENCH_QUICK === "1"
const count = envNumber("BENCH_MILLION_COUNT", quick ? 20_000 : 1_000_000)
const sampleSize = Math.min(count, envNumber("BENCH_MILLION_SAMPLE", quick ? 2_000 : 20_000))
const duration = envNumber("BENCH_DURATION", quick ? 2 : 10)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const databaseUrl = process.env.DATABASE_URL ?? ""
const storeNames = (process.env.BENCH_MILLION_STORES ?? "pglite,postgres").split(",").map((s) => s.trim())
const batch = 100_000

const progress = (line: string) => process.stderr.write(`million: ${line}\n`)

/** The key of license `i`, as the SQL below writes it. */
const keyOf = (i: number): string => {
  const hex = createHash("md5").update(String(i)).digest("hex").slice(0, 16).toUpperCase()
  return `${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}`
}

/** SQL inserting licenses `from`..`to` (inclusive). */
const insertBatch = (from: number, to: number): string => `
  INSERT INTO lm_licenses (
    key, state, product_id, order_id, user_id, max_activations, overage_strategy, is_floating, lease_duration,
    require_heartbeat, heartbeat_interval, valid_for_days, expires_at, grace_days, grace_ends_at, activated_at,
    source, generator_id, subscription_id, meta, created_at, updated_at
  )
  SELECT
    upper(substr(h, 1, 4) || '-' || substr(h, 5, 4) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4)),
    'issued', NULL, NULL, NULL, 5, 'deny', false, 600,
    false, 600, NULL, NULL, 0, NULL, NULL,
    'import', NULL, NULL, '{}'::jsonb, now(), now()
  FROM (SELECT md5(i::text) AS h FROM generate_series(${from}, ${to}) AS i) AS keys`

/** Inserts `count` licenses with `run` (one statement per call), printing progress. */
const insertAll = async (run: (statement: string) => Promise<void>) => {
  const started = performance.now()
  for (let from = 1; from <= count; from += batch) {
    const to = Math.min(count, from + batch - 1)
    await run(insertBatch(from, to))
    progress(`  inserted ${to.toLocaleString("en")} (${fixed((performance.now() - started) / 1000)} s)`)
  }
  await run("ANALYZE lm_licenses")
  return (performance.now() - started) / 1000
}

/** Inserts into a migrated PGlite data folder, opened in this process (and closed before the server opens it). */
const insertPglite = (dataDir: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      return yield* Effect.promise(() => insertAll((statement) => Effect.runPromise(sql.unsafe(statement).pipe(Effect.asVoid))))
    }).pipe(Effect.provide(layerPglite({ dataDir })), Effect.scoped)
  )

/** One store's figures. */
interface Figures {
  readonly store: string
  readonly insertSeconds: number
  readonly startSeconds: number
  readonly rssListening: number
  readonly rssAfterSample: number
  readonly load: RunFigures | undefined
  readonly rssLoadPeak: number
  readonly invalid: number
}

/** Starts the server on a filled store, validates the sample, loads it, and reads RSS along the way. */
const measure = async (store: string, env: Record<string, string>, insertSeconds: number): Promise<Figures> => {
  const auth = bootstrapCredentials()
  const started = performance.now()
  const server = await startListening([lmBin, "serve"], bundledServerEnv(auth, env))
  try {
    const startSeconds = (performance.now() - started) / 1000
    const rssListening = rssMiB(server.pid)
    progress(`  listening after ${fixed(startSeconds, 1)} s, RSS ${fixed(rssListening)} MiB; validating ${sampleSize.toLocaleString("en")} keys`)
    // The sample: keys spread evenly over the whole range.
    const sample = Array.from({ length: sampleSize }, (_, j) => keyOf(1 + Math.floor((j * count) / sampleSize)))
    let invalid = 0
    for (let j = 0; j < sample.length; j += 32) {
      const answers = await Promise.all(sample.slice(j, j + 32).map((key) => call(server.base, "POST", "/validate", { license_key: key })))
      invalid += answers.filter((a) => a.status !== 200 || a.body?.data?.valid !== true).length
      if (j === 0 && invalid > 0) throw new Error(`validate of an inserted key failed: ${JSON.stringify(answers[0]?.body)}`)
    }
    const rssAfterSample = rssMiB(server.pid)
    progress(`  sample validated (${invalid} not valid), RSS ${fixed(rssAfterSample)} MiB; load run of ${duration} s`)
    const url = new URL(server.base)
    const perConnection = Math.ceil(sample.length / connections)
    const loops = Array.from({ length: connections }, (_, c) =>
      sample.slice(c * perConnection, (c + 1) * perConnection).map((key) => ({
        path: `${url.pathname}/validate`,
        body: JSON.stringify({ license_key: key })
      }))).filter((loop) => loop.length > 0)
    let load: RunFigures | undefined
    let sampler: ReturnType<typeof sampleRss> | undefined
    let rssLoadPeak = Number.NaN
    await runLoad(
      { targets: [{ origin: url.origin, loops }], connections, warmupSeconds: 0, durationSeconds: duration, runs: 1 },
      (event) => {
        if (event.event === "start") sampler = sampleRss(server.pid)
        if (event.event === "run") {
          load = event.figures
          rssLoadPeak = sampler?.stop().peak ?? Number.NaN
        }
      }
    )
    progress(`  load: ${fixed(load?.rps ?? Number.NaN)} req/s, p99 ${fixed(load?.p99 ?? Number.NaN, 1)} ms, RSS peak ${fixed(rssLoadPeak)} MiB`)
    return { store, insertSeconds, startSeconds, rssListening, rssAfterSample, load, rssLoadPeak, invalid }
  } finally {
    await server.stop()
  }
}

const runPglite = async (): Promise<Figures> => {
  const data = await pgliteDataDir()
  try {
    progress(`pglite: migrating ${data.dir}`)
    await runNode([lmBin, "migrate"], childEnv({ LM_DATA_DIR: data.dir }))
    progress(`pglite: inserting ${count.toLocaleString("en")} licenses`)
    const insertSeconds = await insertPglite(data.dir)
    return await measure("pglite", { LM_DATA_DIR: data.dir }, insertSeconds)
  } finally {
    await data.remove()
  }
}

const runPostgres = async (): Promise<Figures> => {
  const database = await freshPostgresDatabase(databaseUrl, "million")
  try {
    progress(`postgres: migrating ${database.name}`)
    await runNode([lmBin, "migrate"], childEnv({ DATABASE_URL: database.url }))
    progress(`postgres: inserting ${count.toLocaleString("en")} licenses`)
    const insertSeconds = await insertAll((statement) => runSql(database.url, [statement]))
    return await measure("postgres", { DATABASE_URL: database.url }, insertSeconds)
  } finally {
    await database.drop()
  }
}

progress(machineLine())
const results: Array<Figures> = []
const notes: Array<string> = []
for (const store of storeNames) {
  if (store === "pglite") results.push(await runPglite())
  else if (store === "postgres" && databaseUrl === "") notes.push("postgres: not measured (DATABASE_URL is not set)")
  else if (store === "postgres") results.push(await runPostgres())
  else throw new Error(`BENCH_MILLION_STORES: unknown store ${store}`)
}

const report = [
  `## ${count.toLocaleString("en")} licenses: server memory (${new Date().toISOString()})`,
  "",
  `${machineLine()}; sample of ${sampleSize.toLocaleString("en")} keys, load run of ${duration} s at ${connections} connections.`,
  "",
  markdownTable(
    ["store", "insert s", "start s", "RSS listening MiB", "RSS after sample MiB", "RSS peak under load MiB", "validate req/s", "p50 ms", "p99 ms", "not valid"],
    results.map((r) => [
      r.store,
      fixed(r.insertSeconds),
      fixed(r.startSeconds, 1),
      fixed(r.rssListening),
      fixed(r.rssAfterSample),
      fixed(r.rssLoadPeak),
      fixed(r.load?.rps ?? Number.NaN),
      fixed(r.load?.p50 ?? Number.NaN, 2),
      fixed(r.load?.p99 ?? Number.NaN, 2),
      String(r.invalid)
    ])
  ),
  ...notes.map((n) => `\n${n}`)
].join("\n")

console.log(report)
const folder = path.join(repoRoot, "bench/results")
fs.mkdirSync(folder, { recursive: true })
fs.writeFileSync(path.join(folder, "million.md"), `${report}\n`)
