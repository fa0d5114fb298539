/**
 * Import and export of licenses (CONTRACT §17) on PGlite and (when `DATABASE_URL` is set) PostgreSQL, through
 * `lm serve`: the time and the server's peak RSS of one `POST /licenses/import` of 10,000 licenses with three
 * machines each (WPLM format, five-group keys, two registered devices and one revoked machine: a body of 1.9 MB,
 * over the 1 MiB other routes take), and of `GET /licenses/export?format=ndjson` over a store holding
 * BENCH_EXPORT_COUNT licenses
 * (default 1,000,000; inserted with SQL before the server starts, as `million.ts` does), the body read and
 * counted line by line as it streams.
 *
 * Run: `node bench/import-export.ts` (after `npx tsc -b`). Settings: BENCH_EXPORT_COUNT, BENCH_IMPORT_COUNT
 * (10,000), BENCH_STORES (pglite,postgres), DATABASE_URL.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { layerPglite } from "@lm/storage-pg"
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
  runNode,
  runSql,
  sampleRss,
  startListening
} from "./support.ts"

const exportCount = envNumber("BENCH_EXPORT_COUNT", 1_000_000)
const importCount = envNumber("BENCH_IMPORT_COUNT", 10_000)
const databaseUrl = process.env.DATABASE_URL ?? ""
const storeNames = (process.env.BENCH_STORES ?? "pglite,postgres").split(",").map((s) => s.trim())
const progress = (line: string) => process.stderr.write(`import-export: ${line}\n`)

/** SQL inserting licenses `from`..`to` (plain, `issued`, keys from md5). */
const insertBatch = (from: number, to: number): string => `
  INSERT INTO lm_licenses (
    key, state, product_id, order_id, user_id, max_activations, overage_strategy, is_floating, lease_duration,
    require_heartbeat, heartbeat_interval, valid_for_days, expires_at, grace_days, grace_ends_at, activated_at,
    source, generator_id, subscription_id, meta, created_at, updated_at
  )
  SELECT
    upper(substr(h, 1, 4) || '-' || substr(h, 5, 4) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4)),
    'issued', NULL, NULL, NULL, 5, 'deny', false, 600, false, 600, NULL, NULL, 0, NULL, NULL,
    'import', NULL, NULL, '{}'::jsonb, now(), now()
  FROM (SELECT md5(i::text) AS h FROM generate_series(${from}, ${to}) AS i) AS keys`

const insertAll = async (run: (statement: string) => Promise<void>) => {
  for (let from = 1; from <= exportCount; from += 100_000) await run(insertBatch(from, Math.min(exportCount, from + 99_999)))
  await run("ANALYZE lm_licenses")
}

interface Figures {
  readonly store: string
  readonly importSeconds: number
  readonly importRss: number
  readonly exportSeconds: number
  readonly exportLines: number
  readonly exportRss: number
  readonly rssBefore: number
}

const measure = async (store: string, env: Record<string, string>): Promise<Figures> => {
  const auth = bootstrapCredentials()
  const server = await startListening([lmBin, "serve"], bundledServerEnv(auth, env))
  try {
    const rssBefore = sampleRss(server.pid).stop().peak
    const data = Array.from({ length: importCount }, (_, i) => ({
      license_key: `WPLMB-${i}-AAAAA-BBBBB-CCCCC`,
      status: 1,
      max_activations: 3,
      registered_devices: [`device-${i}-a`, `device-${i}-b`],
      machines: [{ fingerprint: `device-${i}-c`, status: 3 }]
    }))
    let sampler = sampleRss(server.pid, 50)
    let started = performance.now()
    const imported = await call(server.base, "POST", "/licenses/import", { format: "wplm", data }, auth)
    const importSeconds = (performance.now() - started) / 1000
    const importRss = sampler.stop().peak
    if (imported.status !== 201) throw new Error(`import: ${imported.status} ${JSON.stringify(imported.body).slice(0, 300)}`)
    progress(`${store}: imported ${importCount} (+ ${(imported.body as any).data.machines} machines) in ${fixed(importSeconds, 2)} s, RSS peak ${fixed(importRss)} MiB`)

    sampler = sampleRss(server.pid, 200)
    started = performance.now()
    const response = await fetch(`${server.base}/licenses/export?format=ndjson`, {
      headers: { authorization: `Basic ${Buffer.from(`${auth.consumerKey}:${auth.consumerSecret}`).toString("base64")}` }
    })
    let exportLines = 0
    const decoder = new TextDecoder()
    for await (const chunk of response.body!) {
      for (const c of decoder.decode(chunk as Uint8Array, { stream: true })) if (c === "\n") exportLines++
    }
    const exportSeconds = (performance.now() - started) / 1000
    const exportRss = sampler.stop().peak
    progress(`${store}: exported ${exportLines} lines in ${fixed(exportSeconds, 1)} s, RSS peak ${fixed(exportRss)} MiB`)
    return { store, importSeconds, importRss, exportSeconds, exportLines, exportRss, rssBefore }
  } finally {
    await server.stop()
  }
}

const runPglite = async () => {
  const data = await pgliteDataDir()
  try {
    await runNode([lmBin, "migrate"], childEnv({ LM_DATA_DIR: data.dir }))
    await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* Effect.promise(() => insertAll((statement) => Effect.runPromise(sql.unsafe(statement).pipe(Effect.asVoid))))
      }).pipe(Effect.provide(layerPglite({ dataDir: data.dir })), Effect.scoped)
    )
    return await measure("pglite", { LM_DATA_DIR: data.dir })
  } finally {
    await data.remove()
  }
}

const runPostgres = async () => {
  const database = await freshPostgresDatabase(databaseUrl, "importexport")
  try {
    await runNode([lmBin, "migrate"], childEnv({ DATABASE_URL: database.url }))
    await insertAll((statement) => runSql(database.url, [statement]))
    return await measure("postgres", { DATABASE_URL: database.url })
  } finally {
    await database.drop()
  }
}

progress(machineLine())
const results: Array<Figures> = []
for (const store of storeNames) {
  if (store === "pglite") results.push(await runPglite())
  else if (store === "postgres" && databaseUrl !== "") results.push(await runPostgres())
}
process.stdout.write(`## Import ${importCount.toLocaleString("en")} (with 3 machines each) / export ${exportCount.toLocaleString("en")} (+ the import) licenses (${new Date().toISOString()})\n\n${machineLine()}\n\n`)
process.stdout.write(markdownTable(
  ["store", "import s", "import RSS peak MiB", "export s", "lines", "export RSS peak MiB", "RSS before MiB"],
  results.map((r) => [r.store, fixed(r.importSeconds, 2), fixed(r.importRss), fixed(r.exportSeconds, 1), String(r.exportLines), fixed(r.exportRss), fixed(r.rssBefore)])
))
