/**
 * The PGlite store: the shared cases, durability of a data folder (close and reopen, SIGKILL right after a
 * commit) and a connection lost in the middle of a transaction.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { layerPglite, PgliteBridge, PgliteSession, PgliteTemplate, StoreUnavailable } from "@lm/storage-pg"
import { PGlite } from "@electric-sql/pglite"
import { Deferred, Effect, Fiber, Layer } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql/SqlClient"
import { spawn, spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { once } from "node:events"
import * as path from "node:path"
import type { Duplex } from "node:stream"
import { fileURLToPath } from "node:url"
import { storeCases } from "./storeCases.js"

storeCases("PGlite store", PgliteTemplate.layerTemporary)

describe("PGlite data folder", () => {
  it.live("keeps committed data across close and reopen", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`CREATE TABLE kept (v text)`
        yield* sql.withTransaction(sql`INSERT INTO kept VALUES ('before close')`)
      }).pipe(Effect.provide(layerPglite({ dataDir })))

      const rows = yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        return yield* sql`SELECT v FROM kept`
      }).pipe(Effect.provide(layerPglite({ dataDir })))
      assert.deepStrictEqual(rows, [{ v: "before close" }])
    }).pipe(Effect.scoped))

  it.live("keeps a commit made right before the process is killed with SIGKILL", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      const script = fileURLToPath(new URL("./fixtures/commit-then-wait.mjs", import.meta.url))
      const node = path.resolve(fileURLToPath(new URL("../../../node_modules/.bin/node", import.meta.url)))
      const committed = yield* Effect.promise(async () => {
        const child = spawn(node, [script, dataDir], { stdio: ["ignore", "pipe", "inherit"] })
        let output = ""
        for await (const chunk of child.stdout) {
          output += String(chunk)
          if (output.includes("\n")) break
        }
        child.kill("SIGKILL")
        const [, signal] = await once(child, "exit")
        assert.strictEqual(signal, "SIGKILL")
        return output.trim()
      })
      assert.strictEqual(committed, "committed")

      const rows = yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        return yield* sql`SELECT note FROM crash ORDER BY note`
      }).pipe(Effect.provide(layerPglite({ dataDir })))
      assert.deepStrictEqual(rows, [{ note: "committed before SIGKILL" }])
    }).pipe(Effect.scoped))
})

describe("PGlite data folder lock", () => {
  it.live("refuses a second opener while the folder is open, and lets it in after close", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      const ping = Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`)
      // The second store is built while the first (provided around it) is open.
      const second = yield* Effect.flip(ping.pipe(Effect.provide(layerPglite({ dataDir })))).pipe(
        Effect.provide(layerPglite({ dataDir }))
      )
      assert.instanceOf(second, StoreUnavailable)
      assert.match(second.message, new RegExp(`in use by process ${process.pid}`))
      yield* ping.pipe(Effect.provide(layerPglite({ dataDir })))
    }).pipe(Effect.scoped))

  it.live("takes over the lock of a process that is gone", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      const gone = spawnSync(process.execPath, ["-e", ""]).pid
      writeFileSync(path.join(dataDir, "lm.lock"), `${gone}\n`)
      const rows = yield* Effect.flatMap(SqlClient, (sql) => sql`SELECT 1 AS one`).pipe(
        Effect.provide(layerPglite({ dataDir }))
      )
      assert.deepStrictEqual(rows, [{ one: 1 }])
    }).pipe(Effect.scoped))
})

/** A bridge onto a fresh copy of the template, with PGlite on this thread or on a worker thread. */
const openBridge = (thread: "main" | "worker") =>
  Effect.flatMap(PgliteTemplate.temporaryDataDir, (dataDir) =>
    thread === "main"
      ? Effect.map(
        Effect.acquireRelease(Effect.promise(() => PGlite.create(dataDir)), (db) => Effect.promise(() => db.close())),
        (db) => PgliteBridge.make(db)
      )
      : Effect.map(
        Effect.acquireRelease(Effect.promise(() => PgliteSession.inWorker({ dataDir })), (worker) => Effect.promise(worker.close)),
        (worker) => PgliteBridge.onSession(worker.session)
      ))

describe.each(["main", "worker"] as const)("PGlite store connection (PGlite on the %s thread)", (thread) => {
  it.live("a connection lost mid-transaction leaves the database usable and the work rolled back", () =>
    Effect.gen(function*() {
      const bridge = yield* openBridge(thread)
      const sockets: Array<Duplex> = []
      const sql = yield* PgClient.make({
        stream: () => {
          const socket = bridge.connect()
          sockets.push(socket)
          return socket
        },
        username: "postgres",
        maxConnections: 1
      })
      yield* sql`CREATE TABLE work (v text)`

      const inserted = yield* Deferred.make<void>()
      const transaction = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`INSERT INTO work VALUES ('uncommitted')`
          yield* Deferred.succeed(inserted, undefined)
          yield* Effect.never
        })
      ).pipe(Effect.forkChild)
      yield* Deferred.await(inserted)
      // The connection dies under the open transaction (as a crashed socket would).
      sockets.at(-1)!.destroy()
      yield* Fiber.interrupt(transaction)

      // The pool opens a new connection; the lost transaction's insert is gone and new work commits.
      yield* sql.withTransaction(sql`INSERT INTO work VALUES ('after')`)
      assert.deepStrictEqual(yield* sql`SELECT v FROM work`, [{ v: "after" }])
      assert.isTrue(sockets.length >= 2)
      yield* Effect.promise(() => bridge.close())
    }).pipe(Effect.scoped, Effect.provide(Reactivity.layer)))
})

describe("PGlite on a worker thread", () => {
  /** PGlite on `thread`, loaded from the template instead of running initdb (seconds) for each case. */
  const withTemplate = (thread: "main" | "worker") =>
    Layer.unwrap(Effect.map(PgliteTemplate.templateTarball, (loadDataDir) => layerPglite({ thread, loadDataDir })))

  /** Counts the ticks of a 10 ms timer on this thread while `SELECT pg_sleep(0.3)` runs on a store. */
  const ticksDuringSleep = (thread: "main" | "worker") =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      let ticks = 0
      const timer = setInterval(() => ticks++, 10)
      yield* sql`SELECT pg_sleep(0.3)`.pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
      return ticks
    }).pipe(Effect.provide(withTemplate(thread)))

  it.live("runs a statement while this thread goes on; on this thread the same statement stalls it", () =>
    Effect.gen(function*() {
      // PGlite executes a statement synchronously: on the caller's thread no timer fires until it is done.
      assert.isAtMost(yield* ticksDuringSleep("main"), 1)
      assert.isAtLeast(yield* ticksDuringSleep("worker"), 5)
    }))

  it.live("transactions commit, roll back on failure, and read their own writes", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))`
      yield* sql`INSERT INTO accounts VALUES (1, 10), (2, 0)`
      const move = (amount: number) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE accounts SET balance = balance + ${amount} WHERE id = 2`
          const [to] = yield* sql<{ readonly balance: number }>`SELECT balance FROM accounts WHERE id = 2`
          assert.strictEqual(to!.balance >= amount, true)
          yield* sql`UPDATE accounts SET balance = balance - ${amount} WHERE id = 1`
        }))
      yield* move(4)
      const refused = yield* Effect.flip(move(7))
      assert.strictEqual(refused._tag, "SqlError")
      // Concurrent transactions queue for the one session; each one sees the others' commits.
      yield* Effect.all(Array.from({ length: 20 }, () => Effect.ignore(move(1))), { concurrency: "unbounded" })
      const rows = yield* sql<{ readonly id: number; readonly balance: number }>`SELECT id, balance FROM accounts ORDER BY id`
      assert.deepStrictEqual(rows, [{ id: 1, balance: 0 }, { id: 2, balance: 10 }])
    }).pipe(Effect.provide(withTemplate("worker"))))

  it.live("a database that cannot be opened fails with StoreUnavailable, and the thread ends", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`).pipe(
          Effect.provide(layerPglite({ thread: "worker", loadDataDir: new Blob(["not a data folder"]) }))
        )
      )
      assert.instanceOf(error, StoreUnavailable)
      assert.match(error.message, /Could not open the PGlite database/)
    }))

  it("a process that opened and closed the store exits by itself", async () => {
    const script = fileURLToPath(new URL("./fixtures/open-query-close.mjs", import.meta.url))
    const node = path.resolve(fileURLToPath(new URL("../../../node_modules/.bin/node", import.meta.url)))
    // The template's tarball, so that the child loads it instead of running initdb.
    const tarball = await Effect.runPromise(PgliteTemplate.templateTarballFile)
    const child = spawn(node, [script, tarball], { stdio: ["ignore", "pipe", "inherit"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += String(chunk)))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    const [code, signal] = await once(child, "exit")
    clearTimeout(timer)
    assert.strictEqual(signal, null, "killed: the process did not exit by itself")
    assert.strictEqual(code, 0)
    assert.strictEqual(output.trim(), "answered 2")
  })
})
