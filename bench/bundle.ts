/**
 * Validate throughput of `lm serve` from its bundle against the same build module by module (the bundle's stamp
 * set aside while the second server starts): two memory servers side by side, rate limits on as in the quick
 * bench, wrk (`-t1 -c64`) on POST /validate alternating between them, `BENCH_RUNS` pairs (default 8) of
 * `BENCH_DURATION` s (default 3) after a warm-up of each. Prints each pair and the median ratio bundled ÷ not.
 *
 * Run: `npm run build`, then `node bench/bundle.ts`.
 */
import {
  bootstrapCredentials,
  bundledServerEnv,
  envNumber,
  limitsOn,
  lmBin,
  loadAverage,
  machineLine,
  requireBundle,
  seedValidateKeys,
  startListening,
  withoutBundle
} from "./support.ts"
import { ensureWrk, runWrk, validateScript } from "./wrk.ts"

const runs = envNumber("BENCH_RUNS", 8)
const seconds = envNumber("BENCH_DURATION", 3)
requireBundle()
ensureWrk((line) => console.error(line))

const auth = bootstrapCredentials()
const env = bundledServerEnv(auth, { LM_STORAGE: "memory" }, limitsOn)
const bundled = await startListening([lmBin, "serve"], env)
const modules = await withoutBundle(() => startListening([lmBin, "serve"], env))
try {
  const sides = [{ name: "bundled", server: bundled }, { name: "not bundled", server: modules }] as const
  const keys = new Map<string, Array<string>>()
  for (const side of sides) keys.set(side.name, await seedValidateKeys(side.server.base, auth, 64))
  const load = (side: (typeof sides)[number], duration: number) =>
    runWrk({
      url: side.server.base,
      script: validateScript,
      args: [new URL(side.server.base).pathname, ...keys.get(side.name)!],
      seconds: duration,
      connections: 64
    })
  console.log(`${machineLine()}; load average ${loadAverage()} at the start`)
  for (const side of sides) await load(side, 2)
  const ratios: Array<number> = []
  for (let i = 0; i < runs; i++) {
    // Alternate which side goes first, so that neither always follows the other's load.
    const order = i % 2 === 0 ? sides : [sides[1], sides[0]]
    const rps: Record<string, number> = {}
    for (const side of order) {
      const run = await load(side, seconds)
      if (run.non2xx + run.errors > 0) throw new Error(`${side.name}: ${run.non2xx} non-2xx, ${run.errors} errors`)
      rps[side.name] = run.rps
    }
    ratios.push(rps["bundled"]! / rps["not bundled"]!)
    console.log(`pair ${i + 1}: bundled ${rps["bundled"]!.toFixed(0)} req/s, not bundled ${rps["not bundled"]!.toFixed(0)} req/s, ratio ${ratios.at(-1)!.toFixed(3)} (load ${loadAverage()})`)
  }
  const sorted = [...ratios].sort((a, b) => a - b)
  const median = sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2
  console.log(`bundled ÷ not bundled, validate on memory: median ${median.toFixed(3)} (pairs ${sorted[0]!.toFixed(3)}–${sorted.at(-1)!.toFixed(3)})`)
} finally {
  await bundled.stop()
  await modules.stop()
}
