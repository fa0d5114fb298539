/**
 * Validate with entitlements against today's validate, in one run (issue 29): the bundled server's engine
 * (`Engine.layer`: the validation cache, stored signing keys, node:crypto signer) called in-process, without HTTP,
 * on the memory store, on PGlite and (with `DATABASE_URL`) on PostgreSQL. Two cases, alternated round by round so
 * that the machine's load falls on both alike:
 * - `plain`: validate of licenses without a policy, no codes asked for (today's validate);
 * - `policy`: licenses of a policy with 10 codes (plus 2 of their own), the request asking for 2 of them — the
 *   policy read from the validation cache, the union taken, `ent` signed into the token.
 * Each in two lanes (BENCH_LANES, default `effect,now`): `effect` calls `Licensing.validate`; `now` calls
 * `Licensing.validateNow` first, as the HTTP fast path does (answered on the caller's stack from the cache), and
 * `validate` when it answers undefined (counted on stderr).
 * Printed: each round's ops/s of both and their ratio, and the median ratio (`policy / plain`; the goal is ≥ 0.97);
 * beside them this process's CPU time per op and the ratio of ops per CPU second, which other processes' load
 * disturbs far less than the wall clock (PostgreSQL's own server process is not counted in it).
 *
 * Run: `node bench/entitlements.ts` (after `npx tsc -b`). Settings: BENCH_ROUNDS (default 5), BENCH_ROUND_SECONDS
 * (per case and round, default 2), BENCH_CONNECTIONS (concurrent fibers, default 64). On a loaded machine many short
 * rounds resolve the ratio better (e.g. BENCH_ROUNDS=40 BENCH_ROUND_SECONDS=0.25): past 10 rounds only their median
 * and quartiles are printed.
 */
import { Effect } from "effect"
import { ActivityRecorder, Engine, Licenses, Licensing, Policies, type Services } from "@lm/domain"

import { fixed, markdownTable, median, percentile } from "./stats.ts"
import { envNumber, inProcessStores, throughput } from "./support.ts"

const rounds = envNumber("BENCH_ROUNDS", 5)
const roundSeconds = envNumber("BENCH_ROUND_SECONDS", 2)
const connections = envNumber("BENCH_CONNECTIONS", 64)
const licenseCount = 64
const ipAddress = "127.0.0.1"
const codes = Array.from({ length: 10 }, (_, i) => `feature-${i}`)

/** A round's figures of one case: ops/s (wall clock) and this process's CPU time per op (µs, user + system). */
interface Figures {
  readonly opsPerSecond: number
  readonly cpuMicrosPerOp: number
}

/** How validate is called: `effect`, `Licensing.validate`; `now`, `Licensing.validateNow` as the HTTP fast path calls it. */
type Lane = "effect" | "now"
const lanes = (process.env.BENCH_LANES ?? "effect,now").split(",").map((lane) => lane.trim()).filter((lane): lane is Lane => lane === "effect" || lane === "now")

type Row = { readonly lane: Lane; readonly round: number; readonly plain: Figures; readonly policy: Figures }

const runOn = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const recorder = yield* ActivityRecorder
    const context = yield* Effect.context<never>()
    const { policy } = yield* (yield* Policies).create({ name: "Bench", entitlements: codes })
    const plain: Array<string> = []
    const planned: Array<string> = []
    for (let i = 0; i < licenseCount; i++) {
      plain.push((yield* licenses.create({ maxActivations: 64 })).license.key)
      planned.push((yield* licenses.create({ maxActivations: 64, policyId: policy.id, entitlements: ["own-a", "own-b"] })).license.key)
    }
    const required = ["feature-3", "own-a"]
    // Each answer is checked, and counted, the same way in both cases, so that the harness costs them alike.
    const done = { plain: 0, policy: 0 }
    /** Calls `validateNow` did not answer (the fast path then runs `validate`, as here). */
    let notNow = 0
    const valid = (name: keyof typeof done) => (r: { readonly validation: { readonly valid: boolean; readonly code: string } }) => {
      done[name]++
      return r.validation.valid ? Effect.void : Effect.die(new Error(`${name} case refused: ${r.validation.code}`))
    }
    const plainValid = valid("plain")
    const policyValid = valid("policy")
    const call = (lane: Lane, input: Services.ValidateInput) => {
      if (lane === "effect") return licensing.validate(input)
      return Effect.suspend(() => {
        const answer = licensing.validateNow(input, context)
        if (answer !== undefined) return Effect.succeed(answer)
        notNow++
        return licensing.validate(input)
      })
    }
    const casesOf = (lane: Lane) => ({
      plain: (w: number) => Effect.tap(call(lane, { licenseKey: plain[w % licenseCount]!, ipAddress }), plainValid),
      policy: (w: number) => Effect.tap(call(lane, { licenseKey: planned[w % licenseCount]!, ipAddress, entitlements: required }), policyValid)
    })
    const rows: Array<Row> = []
    for (const lane of lanes) {
      const cases = casesOf(lane)
      for (const op of Object.values(cases)) yield* throughput(Math.min(1, roundSeconds), connections, op)
      notNow = 0
      for (let round = 1; round <= rounds; round++) {
        // Alternate which case goes first, so that neither always runs on the warmer (or busier) half of a round.
        const order = round % 2 === 1 ? (["plain", "policy"] as const) : (["policy", "plain"] as const)
        const figures: Record<keyof typeof done, Figures> = { plain: { opsPerSecond: 0, cpuMicrosPerOp: 0 }, policy: { opsPerSecond: 0, cpuMicrosPerOp: 0 } }
        for (const name of order) {
          // CPU time is this process's own (the engine, the store's client, PGlite; not a PostgreSQL server's): other
          // processes' load slows the wall clock far more than it changes it. The event log's flush is the ops' work too.
          const cpu = process.cpuUsage()
          const before = done[name]
          const opsPerSecond = yield* throughput(roundSeconds, connections, cases[name])
          yield* recorder.flush
          const used = process.cpuUsage(cpu)
          figures[name] = { opsPerSecond, cpuMicrosPerOp: (used.user + used.system) / (done[name] - before) }
        }
        rows.push({ lane, round, ...figures })
        process.stderr.write(
          `entitlements ${store} ${lane} round ${round}: plain ${fixed(figures.plain.opsPerSecond)} ops/s ${fixed(figures.plain.cpuMicrosPerOp, 1)} µs CPU/op, ` +
            `policy ${fixed(figures.policy.opsPerSecond)} ops/s ${fixed(figures.policy.cpuMicrosPerOp, 1)} µs CPU/op\n`
        )
      }
      if (lane === "now") process.stderr.write(`entitlements ${store} now: ${notNow} calls not answered at once (validate ran)\n`)
    }
    return rows
  })

const output: Array<Array<string>> = []
for (const store of inProcessStores(process.env.DATABASE_URL ?? "", "entitlements")) {
  const { layer, cleanup } = await store.open()
  try {
    const rows = await Effect.runPromise(runOn(store.name).pipe(Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0 })), Effect.scoped))
    for (const lane of lanes) {
      const laneRows = rows.filter((r) => r.lane === lane)
      const wall = (r: Row) => r.policy.opsPerSecond / r.plain.opsPerSecond
      // Ops per CPU second of the policy case over the plain one's: plain CPU per op ÷ policy CPU per op.
      const cpu = (r: Row) => r.plain.cpuMicrosPerOp / r.policy.cpuMicrosPerOp
      const sorted = (f: (r: Row) => number) => laneRows.map(f).sort((a, b) => a - b)
      const quartiles = (values: ReadonlyArray<number>) => `${fixed(percentile(values, 25), 2)}–${fixed(percentile(values, 75), 2)}`
      // Many short rounds (a loaded machine) are summed up by the median and quartiles of their ratios.
      if (laneRows.length <= 10) {
        for (const row of laneRows) {
          output.push([
            store.name,
            lane,
            String(row.round),
            fixed(row.plain.opsPerSecond),
            fixed(row.policy.opsPerSecond),
            fixed(wall(row), 2),
            `${fixed(row.plain.cpuMicrosPerOp, 1)} / ${fixed(row.policy.cpuMicrosPerOp, 1)}`,
            fixed(cpu(row), 2)
          ])
        }
      }
      output.push([
        store.name,
        lane,
        `median of ${laneRows.length}`,
        fixed(median(laneRows.map((r) => r.plain.opsPerSecond))),
        fixed(median(laneRows.map((r) => r.policy.opsPerSecond))),
        `**${fixed(median(sorted(wall)), 2)}** (${quartiles(sorted(wall))})`,
        `${fixed(median(laneRows.map((r) => r.plain.cpuMicrosPerOp)), 1)} / ${fixed(median(laneRows.map((r) => r.policy.cpuMicrosPerOp)), 1)}`,
        `**${fixed(median(sorted(cpu)), 2)}** (${quartiles(sorted(cpu))})`
      ])
    }
  } finally {
    await cleanup()
  }
}
console.log(markdownTable([
  "store",
  "lane",
  "round",
  "plain validate ops/s",
  "10-code policy validate ops/s",
  "policy / plain, ops/s (quartiles)",
  "CPU µs/op plain / policy",
  "policy / plain, ops per CPU second (quartiles)"
], output))
