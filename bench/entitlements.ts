/**
 * Validate with entitlements against today's validate, in one run (issue 29): the bundled server's engine
 * (`Engine.layer`: the validation cache, stored signing keys, node:crypto signer) called in-process, without HTTP,
 * on the memory store, on PGlite and (with `DATABASE_URL`) on PostgreSQL. Three cases, their order rotating round
 * by round so that the machine's load falls on all alike:
 * - `plain`: validate of licenses without a policy, no codes asked for (today's validate);
 * - `policy`: licenses of a policy with 10 codes (plus 2 of their own), the request asking for 2 of them — the
 *   policy read from the validation cache, the union taken, `ent` signed into the token;
 * - `control`: `plain` again, on licenses of its own: control / plain is the noise floor of policy / plain.
 * Each in two lanes (BENCH_LANES, default `effect,now`): `effect` calls `Licensing.validate`; `now` calls
 * `Licensing.validateNow` first, as the HTTP fast path does (answered on the caller's stack from the cache), and
 * `validate` when it answers undefined (counted, per case).
 * Printed (each round on stderr): per store and lane the median over the rounds of policy / plain (the goal is
 * ≥ 0.97) and of control / plain, by ops/s and by ops per CPU second of this process, which other processes' load
 * disturbs far less than the wall clock (PostgreSQL's own server process is not counted in it).
 *
 * Run: `node bench/entitlements.ts` (after `npx tsc -b`; about 3 min). Settings: BENCH_ROUNDS (default 8),
 * BENCH_ROUND_SECONDS (per case and round, default 1), BENCH_CONNECTIONS (concurrent fibers, default 64),
 * BENCH_LANES. On a loaded machine many short rounds resolve the ratio better (e.g. BENCH_ROUNDS=40
 * BENCH_ROUND_SECONDS=0.25).
 */
import { Effect } from "effect"
import { ActivityRecorder, Engine, Licenses, Licensing, Policies, type Services } from "@lm/domain"

import { fixed, markdownTable, median, percentile } from "./stats.ts"
import { envNumber, inProcessStores, loadAverage, machineLine, throughput } from "./support.ts"

const rounds = envNumber("BENCH_ROUNDS", 8)
const roundSeconds = envNumber("BENCH_ROUND_SECONDS", 1)
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

/** The cases: `control` is `plain` again, on licenses of its own: control / plain is the noise floor of policy / plain. */
const caseNames = ["plain", "policy", "control"] as const
type Case = (typeof caseNames)[number]

type Row = { readonly lane: Lane; readonly round: number } & Record<Case, Figures>

const runOn = (store: string) =>
  Effect.gen(function*() {
    const licensing = yield* Licensing
    const licenses = yield* Licenses
    const recorder = yield* ActivityRecorder
    const context = yield* Effect.context<never>()
    const { policy } = yield* (yield* Policies).create({ name: "Bench", entitlements: codes })
    const plain: Array<string> = []
    const planned: Array<string> = []
    const control: Array<string> = []
    for (let i = 0; i < licenseCount; i++) {
      plain.push((yield* licenses.create({ maxActivations: 64 })).license.key)
      planned.push((yield* licenses.create({ maxActivations: 64, policyId: policy.id, entitlements: ["own-a", "own-b"] })).license.key)
      control.push((yield* licenses.create({ maxActivations: 64 })).license.key)
    }
    const required = ["feature-3", "own-a"]
    // Each answer is checked, and counted, the same way in both cases, so that the harness costs them alike.
    const done: Record<Case, number> = { plain: 0, policy: 0, control: 0 }
    /** Calls `validateNow` did not answer (the fast path then runs `validate`, as here), by case. */
    const notNow: Record<Case, number> = { plain: 0, policy: 0, control: 0 }
    const valid = (name: Case) => (r: { readonly validation: { readonly valid: boolean; readonly code: string } }) => {
      done[name]++
      return r.validation.valid ? Effect.void : Effect.die(new Error(`${name} case refused: ${r.validation.code}`))
    }
    const plainValid = valid("plain")
    const policyValid = valid("policy")
    const controlValid = valid("control")
    const call = (lane: Lane, name: Case, input: Services.ValidateInput) => {
      if (lane === "effect") return licensing.validate(input)
      return Effect.suspend(() => {
        const answer = licensing.validateNow(input, context)
        if (answer !== undefined) return Effect.succeed(answer)
        notNow[name]++
        return licensing.validate(input)
      })
    }
    const casesOf = (lane: Lane): Record<Case, (w: number) => Effect.Effect<unknown, unknown>> => ({
      plain: (w) => Effect.tap(call(lane, "plain", { licenseKey: plain[w % licenseCount]!, ipAddress }), plainValid),
      policy: (w) =>
        Effect.tap(call(lane, "policy", { licenseKey: planned[w % licenseCount]!, ipAddress, entitlements: required }), policyValid),
      control: (w) => Effect.tap(call(lane, "control", { licenseKey: control[w % licenseCount]!, ipAddress }), controlValid)
    })
    const rows: Array<Row> = []
    const missed = {} as Record<Lane, Record<Case, number>>
    for (const lane of lanes) {
      const cases = casesOf(lane)
      for (const op of Object.values(cases)) yield* throughput(Math.min(1, roundSeconds), connections, op)
      for (const name of caseNames) notNow[name] = 0
      for (let round = 1; round <= rounds; round++) {
        // Rotate which case goes first, so that none always runs on the warmer (or busier) part of a round.
        const order = caseNames.map((_, k) => caseNames[(round + k) % caseNames.length]!)
        const figures = {} as Record<Case, Figures>
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
          `entitlements ${store} ${lane} round ${round}: ` +
            caseNames.map((name) => `${name} ${fixed(figures[name].opsPerSecond)} ops/s ${fixed(figures[name].cpuMicrosPerOp, 1)} µs CPU/op`).join(", ") +
            "\n"
        )
      }
      missed[lane] = { ...notNow }
      if (lane === "now") {
        // On a shared PostgreSQL under load the change feed can fall silent past its bound: the cache then stops
        // serving and the calls go to the store, which costs wall time (and the policy case one more read).
        process.stderr.write(`entitlements ${store} now: calls not answered at once (validate ran): ${caseNames.map((name) => `${name} ${notNow[name]}`).join(", ")}\n`)
      }
    }
    return { rows, missed }
  })

const output: Array<Array<string>> = []
for (const store of inProcessStores(process.env.DATABASE_URL ?? "", "entitlements")) {
  const { layer, cleanup } = await store.open()
  try {
    const { missed, rows } = await Effect.runPromise(
      // The cache's entries are not let reach their age (60 s) inside the run: their reload, once a minute per license
      // on a server, would land in whichever case's round ran then, costing it a round trip per license.
      runOn(store.name).pipe(
        Effect.provide(Engine.layer(layer, { sweepIntervalSeconds: 0, validationCache: { maxAgeMillis: 3_600_000 } })),
        Effect.scoped
      )
    )
    for (const lane of lanes) {
      const laneRows = rows.filter((r) => r.lane === lane)
      const quartiles = (values: ReadonlyArray<number>) => `${fixed(percentile(values, 25), 2)}–${fixed(percentile(values, 75), 2)}`
      for (const other of ["policy", "control"] as const) {
        const wall = laneRows.map((r) => r[other].opsPerSecond / r.plain.opsPerSecond).sort((a, b) => a - b)
        // Ops per CPU second of the other case over the plain one's: plain CPU per op ÷ the other's.
        const cpu = laneRows.map((r) => r.plain.cpuMicrosPerOp / r[other].cpuMicrosPerOp).sort((a, b) => a - b)
        output.push([
          store.name,
          lane,
          other === "policy" ? "policy / plain" : "control: plain / plain",
          fixed(median(laneRows.map((r) => r.plain.opsPerSecond))),
          fixed(median(laneRows.map((r) => r[other].opsPerSecond))),
          `**${fixed(median(wall), 3)}** (${quartiles(wall)})`,
          `${fixed(median(laneRows.map((r) => r.plain.cpuMicrosPerOp)), 1)} / ${fixed(median(laneRows.map((r) => r[other].cpuMicrosPerOp)), 1)}`,
          `**${fixed(median(cpu), 3)}** (${quartiles(cpu)})`,
          lane === "now" ? `${missed[lane].plain} / ${missed[lane][other]}` : "–"
        ])
      }
    }
  } finally {
    await cleanup()
  }
}
console.log(`${machineLine()}\n${rounds} rounds of ${roundSeconds} s per case and lane, ${connections} fibers; load average ${loadAverage()} at the end\n`)
console.log(markdownTable([
  "store",
  "lane",
  "ratio",
  "plain validate ops/s (median)",
  "other case ops/s (median)",
  "ratio by ops/s, median of the rounds (quartiles)",
  "CPU µs/op plain / other",
  "ratio by ops per CPU second (quartiles)",
  "not answered at once, plain / other"
], output))
