/**
 * `LM_WORKERS` (issue 32, "Every core"): `lm serve` with two worker processes on one PostgreSQL database answers on
 * one port from both workers, keeps seats exact under concurrent activations spread over both, prints the
 * bootstrap key once, serves one metrics listener listing each worker's series, and drains both on SIGTERM (exit
 * 0). The refusals on PGlite and memory are in start-refusals.test.ts.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { basic } from "../../packages/http/test/support/Management.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "../http/support/Child.js"
import { freshDatabase } from "../storage-contract/pg-support.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

/** A request on a connection of its own (`Connection: close`), so that the primary hands each to a worker in turn. */
const call = async (base: string, method: string, route: string, body?: unknown, auth?: string) => {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { "content-type": "application/json", connection: "close", ...(auth === undefined ? {} : { authorization: auth }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** The samples of `name` in a Prometheus text, by their `worker` label, summed. */
const byWorker = (text: string, name: string) => {
  const totals = new Map<string, number>()
  for (const line of text.split("\n")) {
    const match = new RegExp(`^${name}\\{worker="(\\d+)"[^}]*\\} (\\S+)$`).exec(line)
    if (match !== null) totals.set(match[1]!, (totals.get(match[1]!) ?? 0) + Number(match[2]))
  }
  return totals
}

// Needs a real PostgreSQL server (several processes cannot share PGlite): runs only when DATABASE_URL is set (in CI it must be).
describe.skipIf(url === "")("LM_WORKERS=2 on PostgreSQL", () => {
  const scope = Effect.runSync(Scope.make())
  let server: ServerProcess | undefined
  afterAll(async () => {
    if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("two workers on one port: both answer, seats exact, one bootstrap key, one metrics listener, SIGTERM drains both", async () => {
    const dbUrl = await Effect.runPromise(Scope.provide(freshDatabase(url, `lm_workers_${process.pid}_${Date.now()}`), scope))
    server = spawnServer({ DATABASE_URL: dbUrl, LM_WORKERS: "2", PORT: "0", HOST: "127.0.0.1", LM_METRICS_PORT: "0", LM_SWEEP_INTERVAL: "0" })
    const [, pid1, pid2] = await waitForOutput(server, /2 workers listening \(pids (\d+), (\d+)\)/, 120_000)
    const [, base] = await waitForOutput(server, /Listening on (http:\/\/\S+)/)
    const [, metricsBase] = await waitForOutput(server, /Metrics on (http:\/\/\S+)\/metrics/)
    expect(pid1).not.toBe(pid2)
    // Both workers listen on the one port the primary holds: one "Listening" line each, the same address.
    expect([...server.output().matchAll(/Listening on (http:\/\/\S+)/g)].map((m) => m[1])).toEqual([base, base])

    // The bootstrap key is made by the first worker alone, before the second starts: printed once.
    const printed = [...server.output().matchAll(/bootstrap api key: consumer_key=(\S+) consumer_secret=(\S+)/g)]
    expect(printed).toHaveLength(1)
    const admin = basic(printed[0]![1]!, printed[0]![2]!)

    // Concurrent activations of 24 devices on a 3-seat license, each on its own connection: exactly 3 seats.
    const created = await call(base!, "POST", "/licenses", { max_activations: 3 }, admin)
    expect(created.status).toBe(201)
    const key = created.body.data.license_key as string
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => call(base!, "POST", "/activate", { license_key: key, fingerprint: `device-${i}` }))
    )
    expect(answers.filter((a) => a.status === 201)).toHaveLength(3)
    expect(answers.filter((a) => a.status === 422).map((a) => a.body.code)).toEqual(Array(21).fill("machine_limit_exceeded"))
    const license = await call(base!, "GET", `/licenses/${key}`, undefined, admin)
    expect(license.body.data.activation_count).toBe(3)
    expect(license.body.data.machines.filter((m: { status: string }) => m.status === "active")).toHaveLength(3)

    // One metrics listener, the primary's: each worker's series labelled by its slot; both answered requests.
    const metrics = await fetch(`${metricsBase}/metrics`)
    expect(metrics.status).toBe(200)
    const text = await metrics.text()
    const answered = byWorker(text, "lm_http_requests_total")
    expect([...answered.keys()].sort()).toEqual(["1", "2"])
    expect(answered.get("1")).toBeGreaterThan(0)
    expect(answered.get("2")).toBeGreaterThan(0)
    expect(answered.get("1")! + answered.get("2")!).toBe(1 + 24 + 1)
    // One HELP and one TYPE line per family, whatever the number of workers.
    expect(text.match(/^# TYPE lm_http_requests_total /gm)).toHaveLength(1)
    const ready = await fetch(`${metricsBase}/health/ready`)
    expect([ready.status, await ready.json()]).toEqual([200, { status: "ready" }])

    // SIGTERM to the primary drains both workers, then it exits 0.
    server.child.kill("SIGTERM")
    expect(await exitWithin(server, 60_000)).toBe(0)
    expect(server.output().match(/Shutting down: no new connections/g)).toHaveLength(2)
    for (const pid of [pid1, pid2]) expect(() => process.kill(Number(pid), 0)).toThrow()
  }, 240_000)
})
