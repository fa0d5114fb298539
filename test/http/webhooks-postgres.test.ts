/**
 * Webhook delivery across processes on one PostgreSQL (CONTRACT §11, issue 16): two `lm serve` processes share
 * the work and never send a delivery twice; events whose transactions commit out of id order are both delivered;
 * and a delivery cut short by `kill -9` is delivered after a restart, as is an event committed while no server
 * ran. The receiver is a real node:http server on loopback; signatures are checked with node:crypto.
 */
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerPostgres } from "@lm/storage-pg"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { freshDatabase } from "../storage-contract/pg-support.js"
import { eventually } from "../support/eventually.js"
import { type Received, type Receiver, startReceiver, verifySignature } from "../support/receiver.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")
const admin = basic(adminKey.consumerKey, adminKey.consumerSecret)

interface Server {
  readonly process: ServerProcess
  readonly base: string
}

const call = async (server: Server, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${server.base}${route}`, {
    method,
    headers: { "content-type": "application/json", authorization: admin },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** The requests of this event type whose data matches, once at least `count` of them arrived. */
const arrivals = (receiver: Receiver, match: (r: Received) => boolean, count = 1, timeout = 30_000) =>
  eventually(() => {
    const found = receiver.received.filter(match)
    expect(found.length).toBeGreaterThanOrEqual(count)
    return found
  }, { timeout, interval: 50 })

// Needs a real PostgreSQL server (processes cannot share PGlite): runs only when DATABASE_URL is set (CI sets it).
describe.skipIf(url === "")("webhooks with several processes on one PostgreSQL (DATABASE_URL)", () => {
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
      LM_WEBHOOK_RETRY_SCHEDULE: "1,1,1",
      LM_WEBHOOK_TIMEOUT: "1"
    })
    const [, base] = await waitForOutput(child, /Listening on (http:\/\/\S+)/)
    const server = { process: child, base: base! }
    servers.push(server)
    return server
  }

  /** Runs statements on the database from the test itself (outside any server). */
  const onDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
    Effect.runPromise(effect.pipe(Effect.provide(layerPostgres({ url: dbUrl, maxConnections: 2 })), Effect.scoped))

  /** Appends an event to the outbox as the service does, in its own transaction. */
  const insertEvent = (sql: SqlClient, key: string) =>
    Effect.map(
      sql<{ id: string }>`INSERT INTO lm_events (type, occurred_at, data)
        VALUES ('license.created', now(), ${JSON.stringify({ license_key: key })}::jsonb) RETURNING id::text AS id`,
      (rows) => Number(rows[0]!.id)
    )

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    dbUrl = await Effect.runPromise(Scope.provide(freshDatabase(url, `lm_webhooks_${process.pid}_${Date.now()}`), scope))
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

  let secret = ""

  it("two processes share delivery: every event arrives, signed, and no delivery is sent twice", async () => {
    const [a, b] = servers as [Server, Server]
    const created = await call(a, "POST", "/webhooks", { url: receiver.url, events: ["license.created"] })
    expect(created.status).toBe(201)
    secret = created.body.data.secret
    const keys: Array<string> = []
    for (let i = 0; i < 30; i++) {
      const res = await call(i % 2 === 0 ? a : b, "POST", "/licenses", {})
      expect(res.status).toBe(201)
      keys.push(res.body.data.license_key)
    }
    const wanted = new Set(keys)
    const got = await arrivals(receiver, (r) => wanted.has(r.body.data?.license_key), 30)
    const deliveries = got.map((r) => r.headers["x-lm-delivery"])
    expect(new Set(deliveries).size, "a delivery was sent twice").toBe(deliveries.length)
    expect(new Set(got.map((r) => r.body.data.license_key))).toEqual(wanted)
    expect(got.every((r) => verifySignature(r, secret))).toBe(true)
  }, 120_000)

  it("delivers both events when two transactions commit out of id order", async () => {
    const [first, second] = await onDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstId = yield* Deferred.make<number>()
      const release = yield* Deferred.make<void>()
      // The first transaction takes its id, then waits: the second takes a later id and commits first.
      const held = yield* sql.withTransaction(Effect.gen(function*() {
        yield* Deferred.succeed(firstId, yield* insertEvent(sql, "OUT-OF-ORDER-FIRST"))
        yield* Deferred.await(release)
      })).pipe(Effect.forkChild)
      const id1 = yield* Deferred.await(firstId)
      const id2 = yield* insertEvent(sql, "OUT-OF-ORDER-SECOND")
      yield* Effect.promise(() => arrivals(receiver, (r) => r.body.data?.license_key === "OUT-OF-ORDER-SECOND"))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)
      return [id1, id2] as const
    }))
    expect(first).toBeLessThan(second)
    const [late] = await arrivals(receiver, (r) => r.body.data?.license_key === "OUT-OF-ORDER-FIRST")
    expect(late!.body.id).toBe(first)
    expect(verifySignature(late!, secret)).toBe(true)
  }, 120_000)

  it("a delivery cut short by kill -9 is delivered after a restart, as is an event committed while no server ran", async () => {
    const [a] = servers as [Server, Server]
    receiver.respond = "hang"
    const created = await call(a, "POST", "/licenses", {})
    const key = created.body.data.license_key as string
    // A server holds the attempt open (the receiver never answers): kill -9 every server now.
    await arrivals(receiver, (r) => r.body.data?.license_key === key)
    for (const server of servers) server.process.child.kill("SIGKILL")
    await Promise.all(servers.map((server) => server.process.exited))
    await onDatabase(Effect.gen(function*() {
      yield* insertEvent(yield* SqlClient, "COMMITTED-WHILE-DOWN")
    }))
    receiver.respond = 200
    await start()
    const again = await arrivals(receiver, (r) => r.body.data?.license_key === key, 2, 60_000)
    expect(new Set(again.map((r) => r.headers["x-lm-delivery"])).size, "the same delivery, attempted again").toBe(1)
    expect(new Set(again.map((r) => r.body.id)).size).toBe(1)
    const [down] = await arrivals(receiver, (r) => r.body.data?.license_key === "COMMITTED-WHILE-DOWN", 1, 60_000)
    expect(verifySignature(down!, secret)).toBe(true)
  }, 180_000)
})
