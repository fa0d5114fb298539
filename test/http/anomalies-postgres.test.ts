/**
 * Background anomaly detection with two `lm serve` processes on one PostgreSQL (CONTRACT §11, issue 17): both
 * run the anomaly rules every 100 ms, and a newly detected anomaly is written to the outbox once between them
 * (the record of announced anomalies and the event commit in one transaction) and arrives once at a webhook.
 */
import { Effect, Exit, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerPostgres } from "@lm/storage-pg"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { freshDatabase } from "../storage-contract/pg-support.js"
import { eventually } from "../support/eventually.js"
import { type Receiver, startReceiver } from "../support/receiver.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")
const admin = basic(adminKey.consumerKey, adminKey.consumerSecret)

interface Server {
  readonly process: ServerProcess
  readonly base: string
}

const call = async (server: Server, method: string, route: string, body?: unknown, auth: string | null = admin) => {
  const response = await fetch(`${server.base}${route}`, {
    method,
    headers: { "content-type": "application/json", ...(auth === null ? {} : { authorization: auth }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as any }
}

// Needs a real PostgreSQL server (processes cannot share PGlite): runs only when DATABASE_URL is set (CI sets it).
describe.skipIf(url === "")("anomaly detection with two processes on one PostgreSQL (DATABASE_URL)", () => {
  let scope: Scope.Closeable
  let dbUrl: string
  let receiver: Receiver
  const servers: Array<Server> = []

  const start = async () => {
    const child = spawnServer({
      DATABASE_URL: dbUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      LM_SWEEP_INTERVAL: "0",
      LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
      LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
      LM_WEBHOOK_ALLOW_INSECURE: "1",
      LM_WEBHOOK_ALLOW_PRIVATE: "1",
      LM_ANOMALY_INTERVAL: "0.1",
      LM_ANOMALY_FAILED_BURST: "3",
      LM_ANOMALY_SPIKE_MINIMUM: "1000"
    })
    const [, base] = await waitForOutput(child, /Listening on (http:\/\/\S+)/)
    const server = { process: child, base: base! }
    servers.push(server)
    return server
  }

  const onDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
    Effect.runPromise(effect.pipe(Effect.provide(layerPostgres({ url: dbUrl, maxConnections: 2 })), Effect.scoped))

  /** How many `anomaly.detected` events the outbox holds for this license key. */
  const outboxed = (key: string) =>
    onDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM lm_events
        WHERE type = 'anomaly.detected' AND data->>'license_key' = ${key}`
      return Number(rows[0]!.n)
    }))

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    dbUrl = await Effect.runPromise(Scope.provide(freshDatabase(url, `lm_anomalies_${process.pid}_${Date.now()}`), scope))
    receiver = await startReceiver()
    // One after the other: the first migrates the fresh database.
    await start()
    await start()
  }, 180_000)

  afterAll(async () => {
    await Promise.all(servers.map(async (server) => {
      if (server.process.child.exitCode !== null || server.process.child.signalCode !== null) return
      server.process.child.kill("SIGTERM")
      await exitWithin(server.process, 30_000).catch(() => server.process.child.kill("SIGKILL"))
    }))
    await receiver?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)

  it("each new anomaly is in the outbox once and arrives once, whichever process detects it", async () => {
    const [a, b] = servers as [Server, Server]
    expect((await call(a, "POST", "/webhooks", { url: receiver.url, events: ["anomaly.detected"] })).status).toBe(201)
    const keys: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const created = await call(i % 2 === 0 ? a : b, "POST", "/licenses", {})
      expect(created.status).toBe(201)
      const key = created.body.data.license_key as string
      keys.push(key)
      // Refusals through both processes: each one's event log counts its own.
      for (let j = 0; j < 4; j++) {
        const res = await call(j % 2 === 0 ? a : b, "POST", "/validate", { license_key: key, fingerprint: "not-activated" }, null)
        expect(res.body.data.valid).toBe(false)
      }
    }
    const got = await eventually(() => {
      const found = receiver.received.filter((r) => r.headers["x-lm-event"] === "anomaly.detected")
      expect(new Set(found.map((r) => r.body.data.license_key))).toEqual(new Set(keys))
      return found
    }, { timeout: 30_000, interval: 50 })
    // Both processes keep running rounds that see the same bursts (10 rounds each per second): none adds an event.
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    for (const key of keys) expect(await outboxed(key), key).toBe(1)
    const all = receiver.received.filter((r) => r.headers["x-lm-event"] === "anomaly.detected")
    expect(all).toHaveLength(keys.length)
    expect(new Set(got.map((r) => r.body.id)).size).toBe(keys.length)
  }, 120_000)
})
