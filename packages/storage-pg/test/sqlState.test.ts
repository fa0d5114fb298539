/**
 * The classification of SQL failures (`sqlState.ts`), on the `SqlError` values @effect/sql-pg itself makes: a server
 * refusing the connection at startup with each SQLSTATE (a fake server speaking the protocol), a refused port, and
 * failing statements on embedded PGlite. Then what `orUnavailable` makes of them, and the one-line outage log.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PgConnection from "@effect/sql-pg/PgConnection"
import { layerPglite, PgliteTemplate } from "@lm/storage-pg"
import { Effect, Exit, Layer, Logger } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, SqlError, UnknownError } from "effect/sql/SqlError"
import { TestClock } from "effect/testing"
import { makeOutageLog, OUTAGE_LOG_INTERVAL, orUnavailableWithin, STORE_CALL_TIMEOUT } from "../src/repositories/failures.js"
import { classify, describe as describeFailure, sqlStateOf, sqlStateVerdicts, type Verdict } from "../src/repositories/sqlState.js"
import { startRefusingServer } from "./refusingServer.js"

/** The `SqlError` of connecting to a server that answers the startup with `sqlState`. */
const refusedWith = (sqlState: string, message = `refused with ${sqlState}`) =>
  Effect.acquireUseRelease(
    Effect.promise(() => startRefusingServer(sqlState, message)),
    (server) =>
      PgConnection.make({ host: "127.0.0.1", port: server.port, username: "postgres", database: "postgres" }).pipe(
        Effect.scoped,
        Effect.flip
      ),
    (server) => Effect.promise(server.close)
  )

const atConnect: ReadonlyArray<readonly [string, Verdict, string]> = [
  ["08000", "unavailable", "connection exception"],
  ["08001", "unavailable", "the client could not establish the connection"],
  ["08006", "unavailable", "connection failure"],
  ["53300", "unavailable", "sorry, too many clients already"],
  ["53100", "unavailable", "could not extend file: No space left on device"],
  ["53200", "unavailable", "out of memory"],
  ["57P01", "unavailable", "terminating connection due to administrator command"],
  ["57P02", "unavailable", "terminating connection because of crash of another server process"],
  ["57P03", "unavailable", "the database system is starting up"],
  ["58030", "unavailable", "could not read block: I/O error"],
  ["28P01", "unavailable", "password authentication failed for user \"postgres\""],
  ["25006", "unavailable", "cannot execute INSERT in a read-only transaction"],
  ["40P01", "retry", "deadlock detected"],
  ["40001", "retry", "could not serialize access due to concurrent update"],
  ["23505", "defect", "duplicate key value violates unique constraint"],
  ["42601", "defect", "syntax error at or near \"SELEC\""],
  ["3D000", "defect", "database \"nope\" does not exist"],
  ["XX000", "defect", "internal error"]
]

describe("the SQLSTATE table", () => {
  it("keys are SQLSTATE classes (2 characters) or codes (5)", () => {
    for (const key of Object.keys(sqlStateVerdicts)) assert.match(key, /^[0-9A-Z]{2}([0-9A-Z]{3})?$/)
  })
})

describe("a server refusing the connection at startup", () => {
  for (const [sqlState, verdict, message] of atConnect) {
    it.effect(`${sqlState} (${message}) is ${verdict}`, () =>
      Effect.gen(function*() {
        const error = yield* refusedWith(sqlState, message)
        assert.isTrue(isSqlError(error))
        assert.strictEqual(sqlStateOf(error), sqlState)
        assert.strictEqual(classify(error).verdict, verdict)
        assert.strictEqual(describeFailure(error), `PgConnection: Failed to connect: ${message} (SQLSTATE ${sqlState})`)
      }))
  }
})

describe("failures without a SQLSTATE (the client's own)", () => {
  it.effect("a refused port is a ConnectionError: unavailable", () =>
    Effect.gen(function*() {
      const error = yield* PgConnection.make({ host: "127.0.0.1", port: 1, username: "postgres" }).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual(error.reason._tag, "ConnectionError")
      assert.isUndefined(sqlStateOf(error))
      assert.strictEqual(classify(error).verdict, "unavailable")
    }))

  it("a protocol failure (UnknownError without a code) is a defect", () => {
    const error = new SqlError({ reason: new UnknownError({ cause: new Error("Unexpected DataRow"), message: "PgConnection: Protocol desync" }) })
    assert.isUndefined(sqlStateOf(error))
    assert.strictEqual(classify(error).verdict, "defect")
  })
})

describe("failing statements on a real server (PGlite)", () => {
  it.effect("a syntax error (42601) and a unique violation (23505) are defects", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const syntax = yield* Effect.flip(sql.unsafe("SELEC 1"))
      assert.strictEqual(sqlStateOf(syntax), "42601")
      assert.strictEqual(classify(syntax).verdict, "defect")
      yield* sql.unsafe("CREATE TEMP TABLE unique_once (id int PRIMARY KEY)")
      yield* sql.unsafe("INSERT INTO unique_once VALUES (1)")
      const unique = yield* Effect.flip(sql.unsafe("INSERT INTO unique_once VALUES (1)"))
      assert.strictEqual(unique.reason._tag, "UniqueViolation")
      assert.strictEqual(sqlStateOf(unique), "23505")
      assert.strictEqual(classify(unique).verdict, "defect")
    }).pipe(
      Effect.provide(Layer.unwrap(Effect.map(PgliteTemplate.templateTarball, (loadDataDir) => layerPglite({ thread: "main", loadDataDir }))))
    ), 60_000)
})

describe("orUnavailable", () => {
  /** A store's call wrapper with an outage log of its own (no other store of this process ends or counts its outage). */
  const storeCallsOfOneStore = () => orUnavailableWithin(STORE_CALL_TIMEOUT, makeOutageLog())

  /** Runs `effect` with a logger that keeps every line, and returns its exit and the lines. */
  const logged = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const lines: Array<{ readonly level: string; readonly message: string; readonly cause: string }> = []
      const logger = Logger.make((entry) => {
        lines.push({
          level: entry.logLevel,
          message: Array.isArray(entry.message) ? entry.message.map(String).join(" ") : String(entry.message),
          cause: String(entry.cause)
        })
      })
      const exit = yield* Effect.exit(effect).pipe(Effect.provide(Logger.layer([logger])))
      return { exit, lines }
    })

  it.effect("an outage: StorageUnavailable naming the SQLSTATE, one warning for many calls, one line when it ends", () =>
    Effect.gen(function*() {
      const orUnavailable = storeCallsOfOneStore()
      const refusal = yield* refusedWith("53300", "sorry, too many clients already")
      const { exit, lines } = yield* logged(Effect.gen(function*() {
        const failures = yield* Effect.forEach(
          Array.from({ length: 20 }),
          () => Effect.flip(orUnavailable(Effect.fail(refusal)))
        )
        yield* orUnavailable(Effect.void)
        return failures
      }))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        for (const failure of exit.value) {
          assert.strictEqual(failure._tag, "StorageUnavailable")
          assert.include(failure.message, "(SQLSTATE 53300)")
          assert.notInclude(failure.message, "too many clients", "the server's text stays in the log")
        }
      }
      assert.deepStrictEqual(lines.map((line) => line.level), ["Warn", "Info"])
      assert.include(lines[0]!.message, "sorry, too many clients already (SQLSTATE 53300)")
      assert.match(lines[1]!.message, /available again .*\(20 calls failed\)/)
      for (const line of lines) assert.notMatch(line.cause, /\bat /, "no stack trace")
    }))

  it.effect("an outage that lasts is logged again once per interval, not per call", () =>
    Effect.gen(function*() {
      const orUnavailable = storeCallsOfOneStore()
      const refusal = yield* refusedWith("57P03", "the database system is starting up")
      const { lines } = yield* logged(Effect.gen(function*() {
        const fail = Effect.ignore(orUnavailable(Effect.fail(refusal)))
        yield* fail
        yield* TestClock.adjust("9 seconds")
        yield* fail
        yield* TestClock.adjust("1 second")
        yield* fail
        yield* fail
        yield* TestClock.adjust(OUTAGE_LOG_INTERVAL)
        yield* fail
        yield* orUnavailable(Effect.void)
      }))
      assert.deepStrictEqual(lines.map((line) => line.level), ["Warn", "Warn", "Warn", "Info"])
      assert.match(lines[1]!.message, /SQLSTATE 57P03\) \(for 10 s, 3 calls failed\)$/)
      assert.match(lines[2]!.message, /\(for 20 s, 5 calls failed\)$/)
      assert.strictEqual(lines[3]!.message, "The store is available again after 20 s (5 calls failed)")
    }))

  it.effect("each store logs its own outage: another store's answers neither end nor count it", () =>
    Effect.gen(function*() {
      const [down, up] = [storeCallsOfOneStore(), storeCallsOfOneStore()]
      const refusal = yield* refusedWith("57P03", "the database system is starting up")
      const { lines } = yield* logged(Effect.gen(function*() {
        yield* Effect.ignore(down(Effect.fail(refusal)))
        yield* up(Effect.void)
        yield* TestClock.adjust(OUTAGE_LOG_INTERVAL)
        yield* up(Effect.void)
        yield* Effect.ignore(down(Effect.fail(refusal)))
      }))
      assert.deepStrictEqual(lines.map((line) => line.level), ["Warn", "Warn"])
      assert.match(lines[1]!.message, /\(for 10 s, 2 calls failed\)$/)
    }))

  it.effect("a bug (23505 outside any expectation) is a defect, not an outage, and logs nothing here", () =>
    Effect.gen(function*() {
      const orUnavailable = storeCallsOfOneStore()
      const unique = yield* refusedWith("23505", "duplicate key value violates unique constraint")
      const { exit, lines } = yield* logged(orUnavailable(Effect.fail(unique)))
      assert.isTrue(Exit.isFailure(exit) && Exit.hasDies(exit))
      assert.deepStrictEqual(lines, [])
    }))
})
