/**
 * Validate with entitlements against today's validate, in one run (issue 29): the bundled server's engine
 * (`Engine.layer`: the validation cache, stored signing keys, node:crypto signer) called in-process, without HTTP,
 * on the memory store, on PGlite and (with `DATABASE_URL`) on PostgreSQL. Two cases, alternated round by round so
 * that the machine's load falls on both alike:
 * - `plain`: `Licensing.validate` of licenses without a policy, no codes asked for (today's validate);
 * - `policy`: licenses of a policy with 10 codes (plus 2 of their own), the request asking for 2 of them — the
 *   policy read from the validation cache, the union taken, `ent` signed into the token.
 * Printed: each round's ops/s of both and their ratio, and the median ratio (`policy / plain`; the goal is ≥ 0.97).
 *
 * Run: `node bench/entitlements.ts` (after `npx tsc -b`). Settings: BENCH_ROUNDS (default 5), BENCH_ROUND_SECONDS
 * (per case and round, default 2), BENCH_CONNECTIONS (concurrent fibers, default 64).
 */
import { Effect } from "effect"
import { ActivityRecorder, Engine, Licenses, Licensing, Policies } from "@lm/domain"
import { fixed, markdownTable } from "./stats.ts"
import { envNumber, inProcessStores, throughput } from "./support.ts"

const rounds = envNumber("BENCH_ROUNDS", 5)
const roundSeconds = envNumber("BENCH_ROUND_SECONDS", 2)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const licenseCount = 64
const ipAddress = "127.0.0.1"
const codes = Array.from({ length: 10 }, (_, i) => `feature-${i}`)

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const runOn = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const recorder = yield* ActivityRecorder
    const { policy } = yield* (yield* Policies).create({ name: "Bench", entitlements: codes })
    const plain: Array<string> = []
    const planned: Array<string> = []
    for (let i = 0; i < licenseCount; i++) {
      plain.push((yield* licenses.create({ maxActivations: 64 })).license.key)
      planned.push((yield* licenses.create({ maxActivations: 64, policyId: policy.id, entitlements: ["own-a", "own-b"] })).license.key)
    }
    const required = ["feature-3", "own-a"]
    // Both cases check the answer the same way, so that the harness costs them alike.
    const valid = (name: string) => (r: { readonly validation: { readonly valid: boolean; readonly code: string } }) =>
      r.validation.valid ? Effect.void : Effect.die(new Error(`${name} case refused: ${r.validation.code}`))
    const plainValid = valid("plain")
    const policyValid = valid("policy")
    const cases = {
      plain: (w: number) => Effect.tap(licensing.validate({ licenseKey: plain[w % licenseCount]!, ipAddress }), plainValid),
      policy: (w: number) =>
        Effect.tap(licensing.validate({ licenseKey: planned[w % licenseCount]!, ipAddress, entitlements: required }), policyValid)
    }
    for (const op of Object.values(cases)) yield* throughput(Math.min(1, roundSeconds), connections, op)
    const rows: Array<{ readonly round: number; readonly plain: number; readonly policy: number }> = []
    for (let round = 1; round <= rounds; round++) {
      // Alternate which case goes first, so that neither always runs on the warmer (or busier) half of a round.
      const order = round % 2 === 1 ? (["plain", "policy"] as const) : (["policy", "plain"] as const)
      const figures = { plain: 0, policy: 0 }
      for (const name of order) {
        figures[name] = yield* throughput(roundSeconds, connections, cases[name])
        yield* recorder.flush
      }
      rows.push({ round, ...figures })
      process.stderr.write(`entitlements ${store} round ${round}: plain ${fixed(figures.plain)} ops/s, policy ${fixed(figures.policy)} ops/s\n`)
    }
    return rows
  })

const output: Array<Array<string>> = []
for (const store of inProcessStores(process.env.DATABASE_URL ?? "", "entitlements")) {
  const { layer, cleanup } = await store.open()
  try {
    const rows = await Effect.runPromise(runOn(store.name).pipe(Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0 })), Effect.scoped))
    for (const row of rows) output.push([store.name, String(row.round), fixed(row.plain), fixed(row.policy), fixed(row.policy / row.plain, 2)])
    output.push([store.name, "median", fixed(median(rows.map((r) => r.plain))), fixed(median(rows.map((r) => r.policy))), `**${fixed(median(rows.map((r) => r.policy / r.plain)), 2)}**`])
  } finally {
    await cleanup()
  }
}
console.log(markdownTable(["store", "round", "plain validate ops/s", "10-code policy validate ops/s", "policy / plain"], output))
