/**
 * The subscriptions' period-end job at scale: N subscriptions (default 100,000) all due at once, and validate's
 * throughput meanwhile.
 *
 * For each store: a fresh store (a new database on the server of `DATABASE_URL`, dropped after; a copy of the
 * PGlite template folder) is migrated, then seeded directly with SQL: N licenses bound to N subscriptions, one in
 * three each of: `pending-cancel` whose period ended an hour ago (→ `cancelled`, its license ends), `active`
 * unpaid since 4 days (past the 3-day grace: → `on-hold`, its license suspended by the subscription), and `active`
 * whose `end_date` passed an hour ago (→ `expired`, its license ends); plus 1,000 plain licenses that the validate
 * load asks about. All in one process on one engine (`Engine.layer`, as `lm serve` builds it; the background jobs
 * off so only the measured run moves): first a validate load alone for BENCH_SUBS_BASELINE seconds (in process:
 * `Licensing.validate`, BENCH_SUBS_CONCURRENCY fibers, each validation counted as a request started, as the HTTP
 * server counts them for `RequestLoad`), then the same load for BENCH_SUBS_DURING seconds while
 * `Subscriptions.runDue` (what the server's job runs) makes moves, yielding to the load; then the load stops and
 * the job finishes alone (its moves/s unloaded); then the load alone again. Then SQL counts check that every
 * subscription made exactly its move and every bound license has the right state.
 *
 * Run: `nice -n 10 node bench/subscriptions.ts` (after `npx tsc -b`). Settings: DATABASE_URL (PostgreSQL runs only
 * with it), BENCH_SUBS_STORES (postgres,pglite), BENCH_SUBS_COUNT (100000), BENCH_SUBS_BASELINE (10),
 * BENCH_SUBS_CONCURRENCY (8), BENCH_SUBS_RATE (validations offered a second, 2000), BENCH_SUBS_DURING (30).
 */
import { Effect, Fiber, Layer, Ref } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Engine, Services } from "@lm/domain"
import { layerOnClient, layerPglite, layerPostgres } from "@lm/storage-pg"
import { envNumber, freshPostgresDatabase, machineLine, pgliteDataDir } from "./support.ts"

const databaseUrl = process.env.DATABASE_URL ?? ""
const stores = (process.env.BENCH_SUBS_STORES ?? "postgres,pglite").split(",").map((s) => s.trim())
const count = envNumber("BENCH_SUBS_COUNT", 100_000)
const baselineSeconds = envNumber("BENCH_SUBS_BASELINE", 10)
const concurrency = envNumber("BENCH_SUBS_CONCURRENCY", 8)
const offered = envNumber("BENCH_SUBS_RATE", 2_000)
const duringSeconds = envNumber("BENCH_SUBS_DURING", 30)
/** Validations started: the requests the engine's background jobs yield to (`requestsStarted`). */
const requests = { started: 0 }
const plain = 1_000

const progress = (line: string) => process.stderr.write(`subscriptions: ${new Date().toISOString().slice(11, 19)} ${line}\n`)

/** The key of license `n` (an SQL expression): `S000-0000-0000-0042` for 42. */
const keySql = (n: string) => {
  const k = `('S' || lpad((${n})::text, 15, '0'))`
  return `substr(${k}, 1, 4) || '-' || substr(${k}, 5, 4) || '-' || substr(${k}, 9, 4) || '-' || substr(${k}, 13, 4)`
}
const keyOf = (n: number) => {
  const k = `S${String(n).padStart(15, "0")}`
  return `${k.slice(0, 4)}-${k.slice(4, 8)}-${k.slice(8, 12)}-${k.slice(12, 16)}`
}

/**
 * Licenses 1..N are bound to subscriptions 1..N (explicit ids); kind = i % 3: 0 pending-cancel, 1 unpaid, 2 end
 * date passed. Licenses N+1..N+1000 are plain. `due_at` is what `nextDueAt` gives with a 3-day grace.
 */
const seedStatements = (n: number): ReadonlyArray<string> => [
  `INSERT INTO lm_licenses (id, key, state, max_activations, overage_strategy, is_floating, lease_duration,
     require_heartbeat, heartbeat_interval, expires_at, grace_days, grace_ends_at, source, subscription_id, created_at, updated_at)
   SELECT i, ${keySql("i")}, 'issued', 5, 'deny', false, 0, false, 0, pe, 0, pe, 'api', i, now() - interval '40 days', now() - interval '40 days'
   FROM generate_series(1, ${n}) AS i,
     LATERAL (SELECT CASE i % 3 WHEN 1 THEN now() - interval '4 days' WHEN 0 THEN now() - interval '1 hour' ELSE now() + interval '20 days' END AS pe) AS p`,
  `INSERT INTO lm_licenses (id, key, state, max_activations, overage_strategy, is_floating, lease_duration,
     require_heartbeat, heartbeat_interval, expires_at, grace_days, grace_ends_at, source, created_at, updated_at)
   SELECT i, ${keySql("i")}, 'issued', 5, 'deny', false, 0, false, 0, null, 0, null, 'api', now(), now()
   FROM generate_series(${n + 1}, ${n + plain}) AS i`,
  `SELECT setval(pg_get_serial_sequence('lm_licenses', 'id'), ${n + plain})`,
  `INSERT INTO lm_subscriptions (id, status, user_id, product_id, license_id, billing_period, billing_interval, amount,
     currency, payment_method, trial_end, billing_anchor, current_period_start, current_period_end, next_payment_at,
     last_payment_at, end_date, cancel_at_period_end, paused_at, cancelled_at, items, due_at, created_at, updated_at, revision)
   SELECT i, CASE WHEN i % 3 = 0 THEN 'pending-cancel' ELSE 'active' END, i % 1000, null, i, 'month', 1, 3000, 'EUR', null,
     null, pe - interval '1 month', pe - interval '1 month', pe, CASE WHEN i % 3 = 0 THEN null ELSE pe END,
     pe - interval '1 month', CASE WHEN i % 3 = 2 THEN now() - interval '1 hour' ELSE null END, i % 3 = 0, null, null,
     '[]'::jsonb,
     CASE i % 3 WHEN 0 THEN pe WHEN 1 THEN pe + interval '3 days' ELSE now() - interval '1 hour' END,
     now() - interval '40 days', now() - interval '40 days', 1
   FROM generate_series(1, ${n}) AS i,
     LATERAL (SELECT CASE i % 3 WHEN 1 THEN now() - interval '4 days' WHEN 0 THEN now() - interval '1 hour' ELSE now() + interval '20 days' END AS pe) AS p`,
  `SELECT setval(pg_get_serial_sequence('lm_subscriptions', 'id'), ${n})`,
  "ANALYZE"
]

/** A PostgreSQL or PGlite client layer (`layerPostgres`, `layerPglite`). */
type ClientLayer = ReturnType<typeof layerPostgres> | ReturnType<typeof layerPglite>

const measure = (client: ClientLayer, n: number) => {
  const store = layerOnClient.pipe(Layer.provideMerge(client))
  return Effect.gen(function*() {
    const sql = yield* SqlClient
    const seedStart = performance.now()
    for (const statement of seedStatements(n)) yield* sql.unsafe(statement)
    const seedSeconds = (performance.now() - seedStart) / 1000
    progress(`seeded ${n} in ${seedSeconds.toFixed(0)} s`)
    const licensing = yield* Services.Licensing
    const subscriptions = yield* Services.Subscriptions

    // The validate load: `concurrency` fibers validating plain licenses in turn, each pausing so that together they
    // offer about `offered` validations a second (unpaced, cached validations outrun what the event log can write),
    // counting answers and keeping their latencies.
    const done = yield* Ref.make(0)
    const latencies: Array<number> = []
    const pause = `${Math.max(0, (concurrency * 1000) / offered)} millis` as const
    const worker = (w: number) =>
      Effect.gen(function*() {
        let i = w
        while (true) {
          const start = performance.now()
          requests.started++
          const answer = yield* licensing.validate({ licenseKey: keyOf(n + 1 + (i % plain)), ipAddress: null })
          latencies.push(performance.now() - start)
          if (answer.validation.code !== "valid") return yield* Effect.die(new Error(`validate: ${answer.validation.code}`))
          yield* Ref.update(done, (x) => x + 1)
          i += concurrency
          yield* Effect.sleep(pause)
        }
      })
    const startLoad = Effect.forkChild(Effect.all(Array.from({ length: concurrency }, (_, w) => worker(w)), { concurrency: "unbounded" }))
    let load = yield* startLoad
    const rate = Effect.fnUntraced(function*(during: Effect.Effect<unknown, unknown>) {
      const before = yield* Ref.get(done)
      latencies.length = 0
      const start = performance.now()
      const result = yield* during
      const seconds = (performance.now() - start) / 1000
      const sorted = [...latencies].sort((a, b) => a - b)
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
      return { result, seconds, perSecond: ((yield* Ref.get(done)) - before) / seconds, p50: at(0.5), p99: at(0.99) }
    })
    yield* Effect.sleep("2 seconds") // warm-up (caches, JIT)
    const baseline = yield* rate(Effect.sleep(`${baselineSeconds} seconds`))
    progress(`validate alone: ${baseline.perSecond.toFixed(0)}/s`)
    // As the server's job: a run that fails (a store call over its 15 s bound) is logged and run again, until
    // nothing is due; the moves of the failed runs' committed batches are counted by SQL afterwards.
    let failedRuns = 0
    const countOf = (q: string) =>
      Effect.map(sql.unsafe(q) as unknown as Effect.Effect<ReadonlyArray<{ n: number }>>, (rows) => Number(rows[0]!.n))
    const dueLeft = countOf(`SELECT count(*)::int AS n FROM lm_subscriptions WHERE due_at IS NOT NULL AND due_at <= now()`)
    const movedSoFar = countOf(`SELECT count(*)::int AS n FROM lm_subscriptions WHERE status IN ('cancelled', 'on-hold', 'expired')`)
    const jobStart = performance.now()
    const job = yield* Effect.forkChild(Effect.gen(function*() {
      while ((yield* dueLeft) > 0) {
        yield* subscriptions.runDue.pipe(Effect.catchCause(() => Effect.sync(() => void failedRuns++)))
      }
    }))
    const during = yield* rate(Effect.sleep(`${duringSeconds} seconds`))
    const movedDuring = yield* movedSoFar
    progress(`validate during the job: ${during.perSecond.toFixed(0)}/s; ${movedDuring} moves in ${duringSeconds} s`)
    yield* Fiber.interrupt(load)
    const aloneStart = performance.now()
    yield* Fiber.join(job)
    const alone = { seconds: (performance.now() - aloneStart) / 1000, moves: (yield* movedSoFar) - movedDuring }
    const total = { seconds: (performance.now() - jobStart) / 1000, moves: yield* movedSoFar }
    progress(`job: ${total.moves} moves in ${total.seconds.toFixed(1)} s (${alone.moves} of them alone in ${alone.seconds.toFixed(1)} s)`)
    load = yield* startLoad
    yield* Effect.sleep("2 seconds")
    const after = yield* rate(Effect.sleep(`${baselineSeconds} seconds`))
    yield* Fiber.interrupt(load)

    const rows = (q: string) => sql.unsafe(q) as unknown as Effect.Effect<ReadonlyArray<Record<string, unknown>>>
    const subs = yield* rows(`SELECT id % 3 AS kind, status, count(*)::int AS n FROM lm_subscriptions GROUP BY 1, 2 ORDER BY 1, 2`)
    const lics = yield* rows(
      `SELECT s.id % 3 AS kind, l.state, coalesce(l.suspended_by, '-') AS by, (l.expires_at <= s.updated_at AND l.grace_days = 0) AS ended,
              count(*)::int AS n
       FROM lm_subscriptions s JOIN lm_licenses l ON l.id = s.license_id GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`
    )
    const outbox = yield* rows(`SELECT count(*)::int AS n FROM lm_events`).pipe(Effect.orElseSucceed(() => [{ n: "?" }]))
    return { seedSeconds, baseline, during, movedDuring, alone, total, after, subs, lics, outbox: outbox[0]?.n, failedRuns }
  }).pipe(
    Effect.provide(Layer.merge(
      Engine.layer(store, {
        sweepIntervalSeconds: 0,
        eventRetentionDays: 0,
        subscriptionJobIntervalSeconds: 0,
        anomalyIntervalSeconds: 0,
        requestsStarted: () => requests.started
      }),
      store
    )),
    Effect.scoped
  )
}

const expected: Record<string, string> = { "0": "cancelled", "1": "on-hold", "2": "expired" }

/** JSON with bigint counts as numbers. */
const json = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === "bigint" ? Number(v) : v))

const report = (store: string, n: number, r: Awaited<ReturnType<typeof run>>) => {
  console.log(`\n### ${store}: ${n.toLocaleString("en")} subscriptions due at once`)
  console.log(`seeded in ${r.seedSeconds.toFixed(0)} s\n`)
  console.log(`| measure | value |\n|---|---|`)
  console.log(`| period-end job: moves | ${r.total.moves} |`)
  console.log(`| period-end job: time | ${r.total.seconds.toFixed(1)} s |`)
  console.log(`| moves during the ${duringSeconds} s under load (yielding to it) | ${r.movedDuring} (${(r.movedDuring / duringSeconds).toFixed(0)}/s) |`)
  console.log(`| moves after the load stopped | ${r.alone.moves} in ${r.alone.seconds.toFixed(1)} s (${(r.alone.moves / r.alone.seconds).toFixed(0)}/s) |`)
  console.log(`| period-end job: runs that failed and were run again | ${r.failedRuns} |`)
  const line = (what: string, x: typeof r.baseline) =>
    console.log(`| validate ${what} (offered ${offered}/s) | ${x.perSecond.toFixed(0)}/s, p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms |`)
  line(`alone, ${baselineSeconds} s before the job`, r.baseline)
  line(`during the job (${duringSeconds} s)`, r.during)
  line(`alone, ${baselineSeconds} s after the job`, r.after)
  console.log(`| validate during / before | ${(r.during.perSecond / r.baseline.perSecond).toFixed(2)} × |`)
  console.log(`\nsubscriptions by kind (id % 3) and status: ${json(r.subs)}`)
  console.log(`bound licenses by kind, state, suspended_by, ended: ${json(r.lics)}`)
  console.log(`event rows (outbox): ${r.outbox}`)
  const wrong = r.subs.filter((row) => expected[String(row.kind)] !== row.status)
  const wrongLicenses = r.lics.filter((row) =>
    String(row.kind) === "1" ? !(row.state === "suspended" && row.by === "subscription") : !(row.state === "issued" && row.ended === true)
  )
  console.log(wrong.length === 0 && wrongLicenses.length === 0 && r.total.moves === n
    ? "check: every subscription made exactly its move and every bound license has the right state"
    : `check FAILED: ${json({ wrong, wrongLicenses, moves: r.total.moves })}`)
}

const run = (client: ClientLayer, n: number) => Effect.runPromise(measure(client, n))

console.log(`# bench/subscriptions.ts, ${new Date().toISOString()}\n${machineLine()}`)
if (stores.includes("postgres") && databaseUrl !== "") {
  const db = await freshPostgresDatabase(databaseUrl, "subscriptions")
  try {
    report("PostgreSQL", count, await run(layerPostgres({ url: db.url, maxConnections: 4 }), count))
  } finally {
    await db.drop()
  }
}
if (stores.includes("pglite")) {
  const data = await pgliteDataDir()
  try {
    report("PGlite", count, await run(layerPglite({ dataDir: data.dir }), count))
  } finally {
    await data.remove()
  }
}
