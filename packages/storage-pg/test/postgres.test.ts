/**
 * The PostgreSQL store: the shared cases on a real server (when DATABASE_URL is set), and bounded failure
 * when the server cannot be reached or goes away.
 */
import { assert, describe, it } from "@effect/vitest"
import { layerPostgres, StoreUnavailable } from "@lm/storage-pg"
import { Context, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as net from "node:net"
import { storeCases } from "./storeCases.js"
import { eventuallyEffect } from "../../../test/support/eventually.js"
import { serviceUrl } from "../../../test/support/services.js"

const databaseUrl = serviceUrl("DATABASE_URL")

/** A schema of our own per run, so concurrent runs on one database do not collide. */
const schema = `lm_test_${process.pid}_${Date.now()}`

/** `url` with `search_path` set to `schema` for every connection. */
const withSearchPath = (url: string) => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-c search_path=${schema}`)
  return parsed.toString()
}

/** Creates `schema` for the layer's lifetime and drops it afterwards. */
const ownSchema = (url: string) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* Effect.acquireRelease(
        sql`CREATE SCHEMA ${sql(schema)}`,
        () => sql`DROP SCHEMA ${sql(schema)} CASCADE`.pipe(Effect.ignore)
      )
    })
  ).pipe(Layer.provide(layerPostgres({ url })))

// Skipped without DATABASE_URL: these cases need a PostgreSQL server (CI sets one up).
describe.skipIf(!databaseUrl)("PostgreSQL server", () => {
  const url = databaseUrl ?? "postgres://skipped@127.0.0.1:1/skipped"
  storeCases("PostgreSQL store", layerPostgres({ url: withSearchPath(url) }).pipe(Layer.provideMerge(ownSchema(url))))
})

/** A TCP proxy to the server whose connections can be cut, as if the server had died. */
const makeProxy = (target: URL) =>
  Effect.acquireRelease(
    Effect.callback<{
      readonly port: number
      /** The local ports of the proxy's connections to the server (`client_port` in `pg_stat_activity`). */
      readonly upstreamPorts: () => Array<number>
      readonly cut: () => void
      readonly server: net.Server
    }>((resume) => {
      const sockets = new Set<net.Socket>()
      const upstreams = new Set<net.Socket>()
      const server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname)
        upstreams.add(upstream)
        upstream.once("close", () => upstreams.delete(upstream))
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.once("close", () => sockets.delete(socket))
          socket.on("error", () => {})
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          port: (server.address() as net.AddressInfo).port,
          upstreamPorts: () => [...upstreams].flatMap((socket) => socket.localPort === undefined ? [] : [socket.localPort]),
          cut: () => sockets.forEach((socket) => socket.destroy()),
          server
        })))
    }),
    ({ cut, server }) => Effect.sync(() => (cut(), server.close()))
  )

// Skipped without DATABASE_URL: the proxy needs a real server behind it.
describe.skipIf(!databaseUrl)("PostgreSQL server going away", () => {
  it.live("fails the query in flight when the connection drops, then reconnects", () =>
    Effect.gen(function*() {
      const target = new URL(databaseUrl ?? "")
      const proxy = yield* makeProxy(target)
      const proxied = new URL(target)
      proxied.host = `127.0.0.1:${proxy.port}`
      const sql = Context.get(yield* Layer.build(layerPostgres({ url: proxied.toString() })), SqlClient)

      assert.deepStrictEqual(yield* sql`SELECT 1 AS one`, [{ one: 1 }])
      const inFlight = yield* Effect.forkChild(sql`SELECT pg_sleep(30)`)
      // Cut once the server runs the query: seen from a direct connection, the proxy's ports telling this run's
      // connections from those of concurrent runs.
      const direct = Context.get(yield* Layer.build(layerPostgres({ url: target.toString(), maxConnections: 1 })), SqlClient)
      yield* eventuallyEffect(
        Effect.suspend(() =>
          direct<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE client_port IN ${direct.in(proxy.upstreamPorts())} AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`
        ).pipe(Effect.map((rows) => assert.strictEqual(rows[0]?.n, 1)))
      )
      proxy.cut()
      const error = yield* Effect.flip(Fiber.join(inFlight))
      assert.strictEqual(error.reason._tag, "ConnectionError")

      // The pool replaces the dead connection.
      assert.deepStrictEqual(yield* sql`SELECT 2 AS two`, [{ two: 2 }])
    }).pipe(Effect.scoped))
})

describe("PostgreSQL server unreachable", () => {
  it.live("fails with StoreUnavailable when nothing listens on the port", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(layerPostgres({ url: "postgres://postgres@127.0.0.1:1/test" })))
      assert.instanceOf(error, StoreUnavailable)
      assert.match(error.message, /ECONNREFUSED|Failed to connect/)
    }).pipe(Effect.scoped))

  it.live("fails with StoreUnavailable after the connect timeout when the server never answers", () =>
    Effect.gen(function*() {
      // Accepts TCP connections and never says a word, like a hung server.
      const server = yield* Effect.acquireRelease(
        Effect.callback<net.Server>((resume) => {
          const sockets = new Set<net.Socket>()
          const server = net.createServer((socket) => {
            sockets.add(socket)
            socket.on("error", () => {})
          })
          server.on("close", () => sockets.forEach((socket) => socket.destroy()))
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.sync(() => server.close())
      )
      const port = (server.address() as net.AddressInfo).port
      const error = yield* Effect.flip(
        Layer.build(layerPostgres({ url: `postgres://postgres@127.0.0.1:${port}/test`, connectTimeout: "300 millis" }))
      )
      assert.instanceOf(error, StoreUnavailable)
      assert.match(error.message, /timed out/)
    }).pipe(Effect.scoped))
})
