/**
 * `node bench/growth.ts` (after `npm run build`): does the server stay flat over a long validate load? For each
 * configuration — `lm serve` on memory, on PGlite (a fresh copy of the template data folder) — it starts the
 * server, seeds a few licenses, drives POST /validate with autocannon for a bounded time and samples, every
 * interval, the number of validations answered, the server's RSS and the size of the data folder (PGlite: the
 * database files, WAL included). Then, on PGlite, it stops the server and measures how fast the event log is
 * pruned in retention's batches (1,000 rows per statement, no pause), which is what bounds the folder once the
 * retention window (`LM_EVENT_RETENTION_DAYS`) is reached: a short run cannot wait days for entries to age.
 *
 * Settings (environment): GROWTH_SECONDS (load per configuration, default 180), GROWTH_SAMPLE_SECONDS (default
 * 10), GROWTH_CONNECTIONS (default 32), GROWTH_CONFIGS (comma list of memory, pglite; default both),
 * GROWTH_RATE (requests per second over all connections, a steady load; default 0: as fast as the server
 * answers), GROWTH_RETENTION_DAYS (the server's `LM_EVENT_RETENTION_DAYS`, fractions allowed, e.g. 0.002 =
 * 172.8 s, to see retention bound the log within the run; default: the server's own, 90 days).
 * Prints markdown tables on stdout; nothing is asserted.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import autocannon, { type Client } from "autocannon"
import { Effect } from "effect"
import { Ports } from "@lm/domain"
import { layerPgliteStore } from "@lm/storage-pg"
import { fixed, markdownTable } from "./stats.ts"
import {
  bootstrapCredentials,
  bundledServerEnv,
  call,
  envNumber,
  expectStatus,
  lmBin,
  machineLine,
  pgliteDataDir,
  rssMiB,
  startListening
} from "./support.ts"

const settings = {
  seconds: envNumber("GROWTH_SECONDS", 180),
  sampleSeconds: envNumber("GROWTH_SAMPLE_SECONDS", 10),
  connections: envNumber("GROWTH_CONNECTIONS", 32),
  configs: (process.env.GROWTH_CONFIGS ?? "memory,pglite").split(",").map((c) => c.trim()),
  rate: envNumber("GROWTH_RATE", 0),
  retentionDays: process.env.GROWTH_RETENTION_DAYS
}

const progress = (line: string) => process.stderr.write(`growth: ${line}\n`)

/** Bytes under a folder (files only), or 0 for none. */
const folderBytes = (dir: string | undefined): number => {
  if (dir === undefined) return 0
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size
  }
  return total
}

const MiB = 2 ** 20
const auth = bootstrapCredentials()

interface Sample {
  readonly seconds: number
  readonly validations: number
  readonly rss: number
  readonly dataBytes: number
}

/** Starts `lm serve`, seeds licenses, loads POST /validate for the configured time and samples it. */
const runConfig = async (config: string): Promise<{ readonly samples: ReadonlyArray<Sample>; readonly dataDir?: string }> => {
  const data = config === "pglite" ? await pgliteDataDir() : undefined
  const env = bundledServerEnv(
    auth,
    data === undefined ? { LM_STORAGE: "memory" } : { LM_DATA_DIR: data.dir },
    settings.retentionDays === undefined ? {} : { LM_EVENT_RETENTION_DAYS: settings.retentionDays }
  )
  const server = await startListening([lmBin, "serve"], env)
  try {
    for (let i = 0; (await call(server.base, "GET", "/health").catch(() => undefined))?.status !== 200; i++) {
      if (i > 100) throw new Error("/health never answered 200")
      await new Promise((r) => setTimeout(r, 100))
    }
    const keys: Array<string> = []
    for (let i = 0; i < 16; i++) {
      keys.push((await expectStatus(201, server.base, "POST", "/licenses", { max_activations: 1 }, auth)).body.data.license_key)
    }
    const url = new URL(server.base)
    let validations = 0
    const start = Date.now()
    const samples: Array<Sample> = []
    const sample = () =>
      samples.push({
        seconds: Math.round((Date.now() - start) / 1000),
        validations,
        rss: rssMiB(server.pid),
        dataBytes: folderBytes(data?.dir)
      })
    sample()
    const timer = setInterval(sample, settings.sampleSeconds * 1000)
    progress(`${config}: pid ${server.pid}, ${settings.seconds} s of POST /validate on ${settings.connections} connections`)
    let next = 0
    // Connection i validates license i mod 16, over and over.
    const instance = autocannon({
      url: url.origin,
      connections: settings.connections,
      duration: settings.seconds,
      timeout: 30,
      ...(settings.rate > 0 ? { overallRate: settings.rate } : {}),
      setupClient: (client: Client) =>
        client.setRequests([{
          method: "POST",
          path: `${url.pathname}/validate`,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ license_key: keys[next++ % keys.length] })
        }])
    })
    instance.on("response", (_client: Client, status: number) => {
      if (status === 200) validations++
    })
    await instance
    clearInterval(timer)
    // The event log is flushed every 250 ms: the last sample is taken once it had time to land.
    await new Promise((r) => setTimeout(r, 1_000))
    sample()
    return { samples, ...(data === undefined ? {} : { dataDir: data.dir }) }
  } finally {
    await server.stop()
  }
}

/** On a stopped PGlite folder: rows of the event log, and how fast retention's batches delete them all. */
const pruneRate = (dataDir: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const log = yield* Ports.ActivityLog
      const rows = yield* log.count({})
      const started = Date.now()
      let deleted = 0
      for (let n = -1; n !== 0;) {
        n = yield* log.prune(Date.now() + 1, 1_000)
        deleted += n
      }
      return { rows, deleted, seconds: (Date.now() - started) / 1000 }
    }).pipe(Effect.provide(layerPgliteStore({ dataDir, thread: "main" })), Effect.scoped)
  )

const lines: Array<string> = [
  `machine: ${machineLine()}`,
  `load: ${settings.seconds} s of POST /validate (no fingerprint), ${settings.connections} connections${
    settings.rate > 0 ? ` at ${settings.rate} req/s` : ""
  }, sampled every ${settings.sampleSeconds} s${
    settings.retentionDays === undefined ? "" : `, LM_EVENT_RETENTION_DAYS=${settings.retentionDays}`
  }`,
  ""
]
for (const config of settings.configs) {
  const { samples, dataDir } = await runConfig(config)
  const first = samples[0]!
  const last = samples[samples.length - 1]!
  lines.push(`### ${config}`, "")
  lines.push(markdownTable(
    ["t (s)", "validations", "RSS (MiB)", "data folder (MiB)"],
    samples.map((s) => [String(s.seconds), String(s.validations), fixed(s.rss), config === "pglite" ? fixed(s.dataBytes / MiB) : "—"])
  ))
  const grown = last.validations - first.validations
  if (config === "pglite" && grown > 0) {
    lines.push("", `data folder: ${fixed((last.dataBytes - first.dataBytes) / grown)} bytes per validation over the run`)
  }
  if (dataDir !== undefined) {
    const pruned = await pruneRate(dataDir)
    lines.push(
      `pruning (server stopped, batches of 1,000, no pause): ${pruned.deleted} of ${pruned.rows} rows in ${fixed(pruned.seconds, 2)} s = ${
        Math.round(pruned.deleted / Math.max(pruned.seconds, 0.001))
      } rows/s; data folder after: ${fixed(folderBytes(dataDir) / MiB)} MiB (freed pages are reused, not returned)`
    )
    await fs.promises.rm(dataDir, { recursive: true, force: true })
  }
  lines.push("")
  progress(`${config}: done`)
}
process.stdout.write(`${lines.join("\n")}\n`)
