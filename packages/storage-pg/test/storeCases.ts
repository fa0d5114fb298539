/**
 * Behaviour every SQL store gives (PGlite through the bridge, a PostgreSQL server): run by pglite.test.ts
 * and postgres.test.ts against their own layer.
 */
import { assert, layer } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { EventLogRowsPerInsert, Migrations, portsLayer } from "@lm/storage-pg"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Registers the shared cases on a fresh, empty database provided by `store`. */
export const storeCases = (name: string, store: Layer.Layer<PgClient.PgClient | SqlClient, unknown>) =>
  layer(store, { excludeTestServices: true, timeout: "120 seconds" })(name, (it) => {
    it.effect("applies the migrations once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const all = Object.keys(Migrations.migrations).map((key) => {
          const [, id, name] = key.match(/^(\d+)_(.+)$/)!
          return [Number(id), name!] as const
        })
        assert.deepStrictEqual(yield* Migrations.migrate, all)
        assert.deepStrictEqual(yield* Migrations.migrate, [])
        yield* sql`INSERT INTO lm_meta (key, value) VALUES ('schema', 'ok')`
        assert.deepStrictEqual(yield* sql`SELECT key, value FROM lm_meta`, [{ key: "schema", value: "ok" }])
      }))

    it.effect("writes the event log in inserts of the set size, every field as recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const base = Date.parse("2026-11-23T10:11:12.345Z")
        const entries: Array<Model.ActivityEntry> = Array.from({ length: 5 }, (_, i) => ({
          kind: i % 2 === 0 ? "validate" : "activate",
          licenseId: i === 4 ? null : 1000 + i,
          licenseKey: `KEY-${i}-É✓'"\\{a,"b"} \\N NULL`,
          machineId: i === 1 ? 77 : null,
          fingerprint: i === 2 ? null : `fp-${i} "quoted" \\ ünï`,
          ipAddress: i === 3 ? null : "2001:db8::1",
          // Texts an array literal treats specially when unquoted: empty, NULL, braces and commas (above).
          appVersion: i === 0 ? "1.2.3" : i === 1 ? "" : i === 3 ? "NULL" : null,
          result: i === 4 ? "license_not_found" : "valid",
          at: base + i
        }))
        const before = (yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_activity`)[0]!.n
        // Two rows per insert: one entry alone, the others through the many-row statement.
        yield* Effect.flatMap(Ports.ActivityLog, (log) => log.record(entries)).pipe(
          Effect.provide(portsLayer.pipe(Layer.provide(Layer.succeed(EventLogRowsPerInsert, 2))))
        )
        const rows = yield* sql<Record<string, unknown>>`
          SELECT kind, license_id, license_key, machine_id, fingerprint, ip_address, app_version, result, at
          FROM lm_activity ORDER BY id DESC LIMIT 5`
        assert.strictEqual(Number((yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_activity`)[0]!.n), Number(before) + 5)
        assert.deepStrictEqual(
          [...rows].reverse().map((r) => ({
            kind: r.kind,
            licenseId: r.license_id === null ? null : Number(r.license_id),
            licenseKey: r.license_key,
            machineId: r.machine_id === null ? null : Number(r.machine_id),
            fingerprint: r.fingerprint,
            ipAddress: r.ip_address,
            appVersion: r.app_version,
            result: r.result,
            at: (r.at as Date).getTime()
          })),
          entries
        )
      }))

    it.effect("round-trips parameters and column types", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const pg = yield* PgClient.PgClient
        yield* sql`CREATE TABLE typed (
          i int4, b int8, t text, j jsonb, ts timestamptz, f bool, n text
        )`
        const at = new Date("2026-11-22T10:11:12.345Z")
        const doc = { a: [1, "x", null], nested: { ok: true }, text: "é ✓ 'quoted' \"double\"" }
        yield* sql`INSERT INTO typed VALUES (
          ${-2147483648}, ${9007199254740993n}, ${"héllo ✓ 'quoted'"}, ${pg.json(doc)}, ${at}, ${true}, ${null}
        )`
        const [row] = yield* sql`SELECT * FROM typed`
        assert.deepStrictEqual(row, {
          i: -2147483648,
          b: 9007199254740993n,
          t: "héllo ✓ 'quoted'",
          j: doc,
          ts: at,
          f: true,
          n: null
        })
        const [selected] = yield* sql`SELECT ${false}::bool AS f, ${null}::int4 AS n, ${"x"}::text AS t`
        assert.deepStrictEqual(selected, { f: false, n: null, t: "x" })
      }))

    it.effect("commits a transaction and rolls back a failed one", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`CREATE TABLE ledger (entry text PRIMARY KEY)`
        const entries = Effect.map(sql<{ entry: string }>`SELECT entry FROM ledger ORDER BY entry`, (rows) =>
          rows.map((row) => row.entry))

        yield* sql.withTransaction(sql`INSERT INTO ledger VALUES ('committed')`)
        const failed = yield* sql.withTransaction(
          Effect.andThen(sql`INSERT INTO ledger VALUES ('rolled back')`, Effect.fail("refused" as const))
        ).pipe(Effect.exit)
        assert.deepStrictEqual(failed, Exit.fail("refused"))

        // A failed inner transaction rolls back to its savepoint; the outer one still commits.
        yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`INSERT INTO ledger VALUES ('outer')`
            yield* sql.withTransaction(
              Effect.andThen(sql`INSERT INTO ledger VALUES ('inner')`, Effect.fail("inner refused"))
            ).pipe(Effect.ignore)
          })
        )
        assert.deepStrictEqual(yield* entries, ["committed", "outer"])
      }))

    it.effect("serialises 200 concurrent read-modify-write transactions with FOR UPDATE", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`CREATE TABLE counter (id int4 PRIMARY KEY, n int4 NOT NULL)`
        yield* sql`INSERT INTO counter VALUES (1, 0)`
        const increment = sql.withTransaction(
          Effect.gen(function*() {
            const [row] = yield* sql<{ n: number }>`SELECT n FROM counter WHERE id = 1 FOR UPDATE`
            yield* Effect.yieldNow
            yield* sql`UPDATE counter SET n = ${row!.n + 1} WHERE id = 1`
          })
        )
        yield* Effect.all(Array.from({ length: 200 }, () => increment), { concurrency: "unbounded", discard: true })
        assert.deepStrictEqual(yield* sql`SELECT n FROM counter WHERE id = 1`, [{ n: 200 }])
      }))
  })
