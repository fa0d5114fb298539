/**
 * The audit log's recording rules (`AuditLog.audited`): a done write's entry is written in its transaction (so a
 * failure after the commit does not change it, and a rolled-back change leaves only the refusal); the target of a
 * create comes from the events of its transaction; entries follow the event log's retention window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AuditLog, Engine, Licenses, Ports, type Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { onEngine } from "./engine.js"
import { T0 } from "./fixtures.js"

const write = (action: string, id: string | null = null): Services.AuditedWrite => ({
  actor: { type: "cli", apiKeyId: null, truncatedKey: null },
  ip: null,
  action,
  target: { type: "license", id },
  requestId: "r-1",
  successStatus: 201
})

/** The outcome an adapter would report: 200 on success, 409 on failure (never used once the entry is written). */
const outcome = (exit: Exit.Exit<unknown, unknown>) => ({ status: Exit.isSuccess(exit) ? 200 : 409, targetId: "from-answer" })

const entries = Effect.flatMap(AuditLog, (log) => log.list({}, { page: 1, perPage: 100 }))

describe("AuditLog.audited", () => {
  it.effect("writes the entry in the write's transaction, with the success status and the created target", () =>
    onEngine(Effect.gen(function*() {
      const audit = yield* AuditLog
      const licenses = yield* Licenses
      // The change commits, then the request fails: the entry committed with it says what was done.
      const created = audit.audited(write("license.create"), Effect.andThen(licenses.create({}), Effect.fail("late")), outcome)
      yield* Effect.flip(created)
      const [entry] = (yield* entries).items
      assert.strictEqual(entry?.status, 201)
      const key = (yield* licenses.list({ page: 1, perPage: 1 } as never)).items[0]?.license.key
      assert.strictEqual(entry?.target.id, key)
    })))

  it.effect("a change that rolls back leaves only the refusal, with the status the adapter reports", () =>
    onEngine(Effect.gen(function*() {
      const audit = yield* AuditLog
      const store = yield* Ports.Store
      const log = yield* Ports.AuditLogRepository
      const rolledBack = store.transaction(Effect.andThen(log.list({}, { page: 1, perPage: 1 }), Effect.fail("refused")))
      yield* Effect.flip(audit.audited(write("license.revoke", "AAAA-BBBB-CCCC-DDDD"), rolledBack, outcome))
      const listed = (yield* entries).items
      assert.deepStrictEqual(listed.map((e) => [e.status, e.target.id]), [[409, "AAAA-BBBB-CCCC-DDDD"]])
    })))

  it.effect("a write without a transaction is recorded once it answers, its target from the answer", () =>
    onEngine(Effect.gen(function*() {
      const audit = yield* AuditLog
      yield* audit.audited(write("license.create"), Effect.void, outcome)
      assert.deepStrictEqual((yield* entries).items.map((e) => [e.status, e.target.id]), [[200, "from-answer"]])
    })))

  it.effect("entries follow the event log's retention window", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* Effect.scoped(
        Effect.gen(function*() {
          const audit = yield* AuditLog
          yield* audit.record({ ...write("signing_key.rotate"), status: 200 })
          // 0.001 days = 86.4 s; retention runs every tenth of it.
          yield* TestClock.adjust("80 seconds")
          assert.strictEqual((yield* entries).total, 1)
          yield* TestClock.adjust("16 seconds")
          assert.strictEqual((yield* entries).total, 0)
        }).pipe(Effect.provide(Engine.layer(Layer.fresh(MemoryStore.layer), {
          sweepIntervalSeconds: 0,
          eventRetentionDays: 0.001,
          anomalyIntervalSeconds: 0,
          activity: { flushEveryMillis: 3_600_000 }
        })))
      )
    }))
})
