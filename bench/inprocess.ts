/**
 * In-process benchmarks: the licensing engine of the bundled server (`Engine.layer` of @lm/domain, i.e. the
 * domain's services, stored signing keys and the node:crypto signer) on the memory store, on PGlite (in
 * memory, loaded from the template) and, when `DATABASE_URL` is set, on a fresh PostgreSQL database (dropped
 * after), called directly, without HTTP. What each case does:
 * - `validate`: `Licensing.validate` of a license key (no fingerprint), signed answer included (the domain signs
 *   it: the whole work of POST /validate's handler); `validate fp`: with an activated fingerprint (what the
 *   earlier case `validate fp + sign` measured, before the domain signed its answers);
 * - `activate+deactivate`: `Licensing.activate` of the worker's fingerprint (its machine certificate included),
 *   then `Licensing.deactivate` — one cycle, on one license with as many seats as workers;
 * - `sign only` (no store): `Tokens.licensePayload` alone, the signing share of validate.
 * Each case runs with 1 worker and with `BENCH_CONNECTIONS` (64) concurrent fibers, after a warm-up. Every call
 * buffers an event-log entry (as in the server); the buffer is written between cases, outside the timings, and
 * how long that took is printed on stderr. After the cycles the license must hold no seat; the count is printed.
 *
 * Run: `node bench/inprocess.ts` (after `npx tsc -b`); `--json` prints the figures as JSON for `run.ts`.
 * Settings: BENCH_QUICK=1, BENCH_INPROCESS_SECONDS (per case, default 3), BENCH_CONNECTIONS.
 */
import { Effect } from "effect"
import { ActivityRecorder, Engine, Licenses, Licensing, Services, Tokens } from "@lm/domain"
import { fixed, markdownTable } from "./stats.ts"
import { envNumber, inProcessStores, throughput } from "./support.ts"

/** One figure: a case on a store at a concurrency. */
export interface InProcessFigure {
  readonly store: string
  readonly case: string
  readonly concurrency: number
  readonly opsPerSecond: number
  /** Mean time of one operation as a caller sees it, in microseconds (concurrency / throughput). */
  readonly meanMicros: number
}

/** What `--json` prints. */
export interface InProcessReport {
  readonly figures: ReadonlyArray<InProcessFigure>
  /** Seats held on the cycle license after the cycles, per store (must be 0). */
  readonly seatsAfterCycles: Record<string, number>
}

const quick = process.env.BENCH_QUICK === "1"
const seconds = envNumber("BENCH_INPROCESS_SECONDS", quick ? 0.5 : 3)
const warmupSeconds = Math.min(seconds, quick ? 0.3 : 1)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const licenseCount = 64
const ipAddress = "127.0.0.1"
const databaseUrl = process.env.DATABASE_URL ?? ""

/** Every case on one store. */
const casesOn = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const tokens = yield* Tokens
    const recorder = yield* ActivityRecorder

    const keys: Array<string> = []
    for (let i = 0; i < licenseCount; i++) {
      const view = yield* licenses.create({ maxActivations: 64 })
      keys.push(view.license.key)
      yield* licensing.activate({ licenseKey: view.license.key, ipAddress, facts: { fingerprint: `validate-${i}` } })
    }
    const cycleKey = (yield* licenses.create({ maxActivations: connections })).license.key
    let sample: Services.ValidateResult | undefined

    const cases: ReadonlyArray<readonly [string, (worker: number) => Effect.Effect<unknown, unknown>]> = [
      ["validate", (w) => licensing.validate({ licenseKey: keys[w % licenseCount]!, ipAddress })],
      [
        "validate fp",
        (w) =>
          Effect.map(licensing.validate({ licenseKey: keys[w % licenseCount]!, fingerprint: `validate-${w % licenseCount}`, ipAddress }), (result) => {
            sample = result
          })
      ],
      ["sign only", () => (sample === undefined ? Effect.void : tokens.licensePayload(sample, { fingerprint: "validate-0", nonce: null }))],
      [
        "activate+deactivate",
        (w) =>
          licensing.activate({ licenseKey: cycleKey, ipAddress, facts: { fingerprint: `cycle-${w}` } }).pipe(
            Effect.andThen(licensing.deactivate({ licenseKey: cycleKey, fingerprint: `cycle-${w}`, ipAddress }))
          )
      ]
    ]

    const figures: Array<InProcessFigure> = []
    for (const [name, op] of cases) {
      for (const workers of [1, connections]) {
        yield* throughput(warmupSeconds, workers, op)
        const opsPerSecond = yield* throughput(seconds, workers, op)
        figures.push({ store, case: name, concurrency: workers, opsPerSecond, meanMicros: (workers / opsPerSecond) * 1e6 })
        // The event log of these calls is written now, outside the timings, so that it does not slow the next case.
        const flushed = performance.now()
        yield* recorder.flush
        process.stderr.write(
          `in-process ${store} ${name} ×${workers}: ${fixed(opsPerSecond)} ops/s (event log flush ${fixed(performance.now() - flushed)} ms)\n`
        )
      }
    }
    const seats = (yield* licenses.get(cycleKey)).activationCount
    return { figures, seats }
  })

const stores = inProcessStores(databaseUrl, "inproc")

const figures: Array<InProcessFigure> = []
const seatsAfterCycles: Record<string, number> = {}
for (const store of stores) {
  const { layer, cleanup } = await store.open()
  try {
    const result = await Effect.runPromise(
      casesOn(store.name).pipe(Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0 })), Effect.scoped)
    )
    figures.push(...result.figures)
    seatsAfterCycles[store.name] = result.seats
  } finally {
    await cleanup()
  }
}

if (process.argv.includes("--json")) {
  const report: InProcessReport = { figures, seatsAfterCycles }
  console.log(JSON.stringify(report))
} else {
  console.log(markdownTable(
    ["store", "case", "fibers", "ops/s", "µs/op"],
    figures.map((f) => [f.store, f.case, String(f.concurrency), fixed(f.opsPerSecond), fixed(f.meanMicros, 1)])
  ))
  console.log(`seats held after the cycles (must be 0): ${JSON.stringify(seatsAfterCycles)}`)
}
