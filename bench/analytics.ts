/**
 * Analytics at scale: how long the overview and the validation series take over a large event log.
 *
 * For each store: a fresh store (a new database on the server of `DATABASE_URL`, dropped after; a copy of the
 * PGlite template folder) is migrated, then seeded directly with SQL (`generate_series`, in batches): licenses
 * (`issued`, 5 seats, product `i % 50`, expiring over the next year) and event-log entries spread evenly over the
 * last 90 days on random licenses (9 in 10 validations, 1 in 7 of them refused; 1 in 10 activations), inserted in
 * time order (oldest first) as a live log is appended, so that the BRIN index on `at` stays tight. The hourly
 * counters are then built from those entries with one `INSERT … SELECT … GROUP BY` that mirrors the domain's
 * `Analytics.hourlyCountsOf` (what the event log's writer adds batch by batch), so are the per-period top-license
 * totals (migration 0012), and the tables are vacuumed and analysed.
 * The engine then opens the store and each query runs `BENCH_ANALYTICS_RUNS` times (median and worst printed):
 * the overview of 7 and 90 days, the 90-day daily series, a 7-day hourly series, one license's 90-day series,
 * and the anomalies.
 *
 * Run: `nice -n 10 node bench/analytics.ts` (after `npx tsc -b`). Settings: DATABASE_URL (PostgreSQL runs only
 * with it), BENCH_ANALYTICS_STORES (postgres,pglite), BENCH_ANALYTICS_EVENTS / BENCH_ANALYTICS_LICENSES (PostgreSQL,
 * default 10,000,000 / 1,000,000), BENCH_ANALYTICS_PGLITE_EVENTS / _LICENSES (default 1,000,000 / 100,000),
 * BENCH_ANALYTICS_RUNS (5), BENCH_ANALYTICS_KEEP_DATABASE_URL (an existing database used instead of a fresh one and
 * not dropped: seeded on the first run, only measured on the next ones, as seeding 10 M events takes 15+ minutes),
 * BENCH_ANALYTICS_SEED_ONLY=1 (seed, do not measure).
 */
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Engine, Services } from "@lm/domain"
import { layerOnClient, layerPglite, layerPostgres } from "@lm/storage-pg"
import { seedStatements } from "./seed.ts"
import { envNumber, freshPostgresDatabase, machineLine, pgliteDataDir } from "./support.ts"

const databaseUrl = process.env.DATABASE_URL ?? ""
const stores = (process.env.BENCH_ANALYTICS_STORES ?? "postgres,pglite").split(",").map((s) => s.trim())
const runs = envNumber("BENCH_ANALYTICS_RUNS", 5)
/** A database to seed once and keep (not dropped): a later run finds it seeded and only measures. */
const keptUrl = process.env.BENCH_ANALYTICS_KEEP_DATABASE_URL ?? ""
const seedOnly = process.env.BENCH_ANALYTICS_SEED_ONLY === "1"

const progress = (line: string) => process.stderr.write(`analytics: ${new Date().toISOString().slice(11, 19)} ${line}\n`)

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const start = performance.now()
      yield* effect
      times.push(performance.now() - start)
    }
    return { median: median(times), worst: Math.max(...times) }
  })

/** A PostgreSQL or PGlite client layer (`layerPostgres`, `layerPglite`). */
type ClientLayer = ReturnType<typeof layerPostgres> | ReturnType<typeof layerPglite>

const measure = (client: ClientLayer, licenses: number, events: number) => {
  // One store: the engine's and the seeding's SQL client are the same instance (layers are shared by reference).
  const store = layerOnClient.pipe(Layer.provideMerge(client))
  return Effect.gen(function*() {
    const sql = yield* SqlClient
    // A kept database seeded by an earlier run (it has licenses) is measured as it is.
    const seeded = (yield* sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM lm_licenses LIMIT 1) AS one`)[0]!.n as number
    const statements = seeded > 0 ? [] : seedStatements(licenses, events)
    const seedStart = performance.now()
    for (const [i, statement] of statements.entries()) {
      yield* sql.unsafe(statement)
      progress(`seed ${i + 1}/${statements.length}`)
    }
    const seedSeconds = (performance.now() - seedStart) / 1000
    if (seedOnly) return { seedSeconds, hourlyRows: 0, results: [] }
    const hourlyRows = (yield* sql`SELECT count(*)::int AS n FROM lm_activity_hourly`)[0]!.n as number
    const analytics = yield* Services.Analytics
    const now = Date.now()
    const one = (yield* sql`SELECT key FROM lm_licenses WHERE id = 1`)[0]!.key as string
    const cases: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
      ["overview 7d", analytics.overview("7d")],
      ["overview 90d", analytics.overview("90d")],
      ["validations 90 days by day", analytics.validations({ from: now - 90 * 86_400_000, to: now, interval: "day" })],
      ["validations 7 days by hour", analytics.validations({ from: now - 7 * 86_400_000, to: now, interval: "hour" })],
      ["validations of one product, 90 days by day", analytics.validations({ from: now - 90 * 86_400_000, to: now, productId: 7 })],
      ["validations of one license, 90 days by day", analytics.validations({ from: now - 90 * 86_400_000, to: now, licenseKey: one })],
      ["anomalies", analytics.anomalies]
    ]
    const results: Array<readonly [string, { median: number; worst: number }]> = []
    for (const [name, effect] of cases) {
      // A query past the store's call timeout is reported as such; the next ones are still measured.
      const r = yield* timed(effect).pipe(Effect.orElseSucceed(() => ({ median: Number.NaN, worst: Number.NaN })))
      progress(`${name}: ${r.median.toFixed(0)} ms`)
      results.push([name, r])
    }
    // A check that the figures are not empty (e.g. top licenses missing from a seed).
    const top = (yield* analytics.overview("7d")).topLicenses
    progress(`overview 7d lists ${top.length} top licenses, the first with ${top[0]?.validations ?? 0} validations`)
    return { seedSeconds, hourlyRows, results }
  }).pipe(
    // A fixed master key, so that a kept database opens again on the next run (the seeded data holds no secret).
    Effect.provide(Layer.merge(Engine.layer(store, { sweepIntervalSeconds: 0, eventRetentionDays: 0, anomalyIntervalSeconds: 0, masterKey: Redacted.make(new Uint8Array(32).fill(7)) }), store)),
    Effect.scoped
  )
}

const report = (store: string, licenses: number, events: number, r: Awaited<ReturnType<typeof run>>) => {
  console.log(`\n### ${store}: ${licenses.toLocaleString("en")} licenses, ${events.toLocaleString("en")} events over 90 days`)
  console.log(`seeded in ${r.seedSeconds.toFixed(0)} s; ${r.hourlyRows.toLocaleString("en")} hourly counter rows\n`)
  console.log(`| query | median ms | worst ms (of ${runs}) |\n|---|---|---|`)
  for (const [name, t] of r.results) {
    console.log(Number.isNaN(t.median) ? `| ${name} | failed (store call timeout, 15 s) | |` : `| ${name} | ${t.median.toFixed(0)} | ${t.worst.toFixed(0)} |`)
  }
}

const run = (client: ClientLayer, licenses: number, events: number) => Effect.runPromise(measure(client, licenses, events))

console.log(`# bench/analytics.ts, ${new Date().toISOString()}\n${machineLine()}`)
if (stores.includes("postgres") && (databaseUrl !== "" || keptUrl !== "")) {
  const licenses = envNumber("BENCH_ANALYTICS_LICENSES", 1_000_000)
  const events = envNumber("BENCH_ANALYTICS_EVENTS", 10_000_000)
  const db = keptUrl !== ""
    ? { url: keptUrl, drop: () => Promise.resolve() }
    : await freshPostgresDatabase(databaseUrl, "analytics")
  try {
    report("PostgreSQL", licenses, events, await run(layerPostgres({ url: db.url, maxConnections: 4 }), licenses, events))
  } finally {
    await db.drop()
  }
}
if (stores.includes("pglite")) {
  const licenses = envNumber("BENCH_ANALYTICS_PGLITE_LICENSES", 100_000)
  const events = envNumber("BENCH_ANALYTICS_PGLITE_EVENTS", 1_000_000)
  const data = await pgliteDataDir()
  try {
    report("PGlite", licenses, events, await run(layerPglite({ dataDir: data.dir }), licenses, events))
  } finally {
    await data.remove()
  }
}
