/**
 * The PGlite store: the shared cases, durability of a data folder (close and reopen, SIGKILL right after a
 * commit) and a connection lost in the middle of a transaction.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { layerPglite, PgliteBridge, PgliteTemplate, StoreUnavailable } from "@lm/storage-pg"
import { PGlite } from "@electric-sql/pglite"
import { Deferred, Effect, Fiber } from "effect"
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

describe("PGlite store connection", () => {
  it.live("a connection lost mid-transaction leaves the database usable and the work rolled back", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => PGlite.create(dataDir)),
        (db) => Effect.promise(() => db.close())
      )
      const bridge = PgliteBridge.make(db)
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
