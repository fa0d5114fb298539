/**
 * Group commit of seat changes (SeatBatches): concurrent client calls share transactions, and each still gets
 * exactly the answer, the stored machines, the events and the event-log entry it gets when calls run one by one.
 * A batch whose transaction fails is re-run call by call, so one bad call never fails its neighbours and nothing
 * is half-written. On the memory store; the storage contract runs the 200-activation race on every store.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Errors, Licenses, Licensing, Machines, Model, Ports, SeatBatchSettings, Services } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { freshTokens, seededRandom, T0 } from "./fixtures.js"

interface Probe {
  /** Transactions begun through the Store port. */
  transactions: number
  /** Event-log entries, as the recorder received them. */
  readonly entries: Array<Model.ActivityEntry>
  /** Fingerprints whose machine writes fail (insert and update, batched or not). */
  readonly poisoned: Set<string>
  /** When set, every batched machine write fails (the single-call path still works). */
  failBatchWrites: boolean
}

const newProbe = (): Probe => ({ transactions: 0, entries: [], poisoned: new Set(), failBatchWrites: false })

/** The memory store with a transaction counter and machine writes that fail on demand. */
const probedStore = (probe: Probe) =>
  Layer.syncContext(() => {
    const ports = MemoryStore.make()
    const store = Context.get(ports, Ports.Store)
    const machines = Context.get(ports, Ports.MachineRepository)
    const broken = new Errors.StorageUnavailable({ message: "injected: the machine write failed" })
    const poisoned = (list: ReadonlyArray<{ readonly fingerprint: string }>) => list.some((m) => probe.poisoned.has(m.fingerprint))
    return ports.pipe(
      Context.add(
        Ports.Store,
        Ports.Store.of({
          ...store,
          transaction: (effect) =>
            Effect.suspend(() => {
              probe.transactions++
              return store.transaction(effect)
            })
        })
      ),
      Context.add(
        Ports.MachineRepository,
        Ports.MachineRepository.of({
          ...machines,
          insert: (draft) => (poisoned([draft]) ? Effect.fail(broken) : machines.insert(draft)),
          update: (machine, components) => (poisoned([machine]) ? Effect.fail(broken) : machines.update(machine, components)),
          writeSeatChanges: (writes) =>
            probe.failBatchWrites || poisoned([...writes.inserts, ...writes.updates]) ? Effect.fail(broken) : machines.writeSeatChanges(writes)
        })
      )
    )
  })

const engine = (probe: Probe, batching: Services.SeatBatchOptions) =>
  Layer.mergeAll(Licenses.layer, Machines.layer).pipe(
    Layer.provideMerge(Licensing.layer.pipe(Layer.provide(freshTokens))),
    Layer.provideMerge(
      Layer.succeed(ActivityRecorder, {
        record: (entry) => Effect.sync(() => void probe.entries.push(entry)),
        recordUnsafe: (entry) => {
          probe.entries.push(entry)
          return Effect.void
        },
        flush: Effect.void,
        dropped: Effect.succeed(0),
        pending: Effect.succeed(0)
      })
    ),
    Layer.provideMerge(probedStore(probe)),
    Layer.provide(seededRandom(3)),
    Layer.provide(Layer.succeed(SeatBatchSettings, batching))
  )

const batched: Services.SeatBatchOptions = { workers: 4, maxBatch: 128 }
const oneByOne: Services.SeatBatchOptions = { workers: 0, maxBatch: 1 }

const client = { ipAddress: "198.51.100.9" }

type Call =
  | { readonly op: "activate"; readonly key: string; readonly fp: string }
  | { readonly op: "deactivate"; readonly key: string; readonly fp: string }
  | { readonly op: "heartbeat"; readonly key: string; readonly fp: string }

/** What a client call answers, as far as these tests look. */
interface Answered {
  readonly created?: boolean | undefined
  readonly machine: Model.Machine
}

/** What the client sees: 201/200 and the machine, or the error's code. */
const answerOf = (exit: Exit.Exit<Answered, unknown>) => {
  if (Exit.isSuccess(exit)) {
    const created = exit.value.created === undefined ? "200" : exit.value.created ? "201" : "200"
    return `${created} ${exit.value.machine.fingerprint} ${exit.value.machine.status}`
  }
  const error = Cause.squash(exit.cause) as { readonly code?: string }
  return error.code ?? "defect"
}

const callOf = (call: Call): Effect.Effect<Answered, unknown, Licensing> =>
  Licensing.use((l): Effect.Effect<Answered, unknown> =>
    call.op === "activate"
      ? l.activate({ ...client, licenseKey: call.key, facts: { fingerprint: call.fp } })
      : call.op === "deactivate"
      ? l.deactivate({ ...client, licenseKey: call.key, fingerprint: call.fp })
      : l.heartbeat({ ...client, licenseKey: call.key, fingerprint: call.fp })
  )

/** Runs the calls at once; answers each call's answer in call order. */
const concurrently = (calls: ReadonlyArray<Call>) =>
  Effect.forEach(calls, (call) => Effect.map(Effect.exit(callOf(call)), answerOf), { concurrency: "unbounded" })

/** What the store holds afterwards, and the event log, comparable across runs. */
const stored = (keys: ReadonlyArray<string>, probe: Probe) =>
  Effect.gen(function*() {
    const licenses = yield* Licenses
    const byKey: Record<string, unknown> = {}
    for (const key of keys) {
      const detail = yield* Effect.exit(licenses.get(key))
      if (Exit.isFailure(detail)) continue
      byKey[key] = {
        status: detail.value.status,
        activationCount: detail.value.activationCount,
        activatedAt: detail.value.license.activatedAt,
        revision: detail.value.license.revision,
        machines: detail.value.machines.map((m) => `${m.fingerprint}:${m.status}`).sort()
      }
    }
    const events = (yield* Ports.EventOutbox.use((o) => o.readAfter(0, 10_000))).map((e) => `${e.type} ${String(e.data.fingerprint ?? "")}`).sort()
    const log = probe.entries.map((e) => `${e.kind} ${e.licenseKey} ${e.fingerprint} ${e.licenseId === null ? "-" : "L"} ${e.result}`).sort()
    return { byKey, events, log }
  })

const sorted = (answers: ReadonlyArray<string>) => [...answers].sort()

describe("seat batches", () => {
  it.effect("64 concurrent activations share few transactions and answer exactly as one-by-one calls do", () =>
    Effect.gen(function*() {
      /** Five seats held before; 10 repeats of those (200), 54 new fingerprints for 30 free seats (201 / 422). */
      const scenario = (probe: Probe) =>
        Effect.gen(function*() {
          const licenses = yield* Licenses
          const key = (yield* licenses.create({ maxActivations: 35 })).license.key
          for (let i = 0; i < 5; i++) yield* callOf({ op: "activate", key, fp: `held-${i}` })
          const calls: Array<Call> = [
            ...Array.from({ length: 10 }, (_, i) => ({ op: "activate" as const, key, fp: `held-${i % 5}` })),
            ...Array.from({ length: 54 }, (_, i) => ({ op: "activate" as const, key, fp: `new-${i}` }))
          ]
          const before = probe.transactions
          const answers = yield* concurrently(calls)
          const used = probe.transactions - before
          return { answers, used, after: yield* stored([key], probe) }
        })
      yield* TestClock.setTime(T0)
      const batchProbe = newProbe()
      const aloneProbe = newProbe()
      const together = yield* Effect.provide(scenario(batchProbe), engine(batchProbe, batched))
      const alone = yield* Effect.provide(scenario(aloneProbe), engine(aloneProbe, oneByOne))

      expect(alone.used).toBe(64)
      expect(together.used).toBeLessThan(16)
      const count = (answers: ReadonlyArray<string>, prefix: string) => answers.filter((a) => a.startsWith(prefix)).length
      for (const run of [together, alone]) {
        expect(count(run.answers, "201")).toBe(30)
        expect(count(run.answers, "200")).toBe(10)
        expect(count(run.answers, "machine_limit_exceeded")).toBe(24)
      }
      // The repeats answer 200 with their machine, whichever run.
      expect(sorted(together.answers.slice(0, 10))).toEqual(sorted(alone.answers.slice(0, 10)))
      // Same seats and records, same events, one event-log entry per call with the same results (which of the
      // 54 new fingerprints won a seat depends on arrival order, so those are compared by count).
      const shape = (after: typeof together.after) => ({
        license: { ...(after.byKey[Object.keys(after.byKey)[0]!] as Record<string, unknown>), machines: undefined },
        machines: ((after.byKey[Object.keys(after.byKey)[0]!] as { machines: Array<string> }).machines).length,
        events: after.events.map((e) => e.replace(/new-\d+/, "new")),
        log: after.log.map((e) => e.replace(/new-\d+/, "new").replace(/[A-Z0-9]{4}(-[A-Z0-9]{4}){3}/, "KEY"))
      })
      expect(shape(together.after)).toEqual(shape(alone.after))
      expect(together.after.log).toHaveLength(69)
      expect((together.after.byKey[Object.keys(together.after.byKey)[0]!] as { activationCount: number }).activationCount).toBe(35)
    }))

  it.effect("a mixed batch: activations, deactivations, heartbeats and refusals each get their own answer", () =>
    Effect.gen(function*() {
      const scenario = (probe: Probe) =>
        Effect.gen(function*() {
          const licenses = yield* Licenses
          const machines = yield* Machines
          const open = (yield* licenses.create({ maxActivations: 3 })).license.key
          const full = (yield* licenses.create({ maxActivations: 1 })).license.key
          const suspended = (yield* licenses.create({})).license.key
          const revokedFp = (yield* licenses.create({})).license.key
          for (const fp of ["on-1", "on-2", "off"]) yield* callOf({ op: "activate", key: open, fp })
          yield* callOf({ op: "deactivate", key: open, fp: "off" })
          yield* callOf({ op: "activate", key: full, fp: "first" })
          yield* licenses.suspend(suspended)
          const bad = yield* callOf({ op: "activate", key: revokedFp, fp: "bad" })
          yield* machines.revoke(bad.machine.id)
          const calls: Array<Call> = [
            { op: "activate", key: open, fp: "new" }, // 201: one seat free (on-1, on-2 held)
            { op: "deactivate", key: open, fp: "on-1" }, // 200, frees a seat
            { op: "heartbeat", key: open, fp: "on-2" }, // ok
            { op: "heartbeat", key: open, fp: "off" }, // 409 machine_inactive
            { op: "deactivate", key: open, fp: "off" }, // 200, already inactive: same answer, no event
            { op: "deactivate", key: open, fp: "nobody" }, // 404 machine_not_found
            { op: "heartbeat", key: open, fp: "nobody-either" }, // 404 machine_not_found
            { op: "activate", key: full, fp: "second" }, // 422
            { op: "activate", key: full, fp: "first" }, // 200 already active
            { op: "activate", key: suspended, fp: "x" }, // 403 license_suspended
            { op: "heartbeat", key: suspended, fp: "x" }, // 404 machine_not_found: the machine is looked up first
            { op: "activate", key: revokedFp, fp: "bad" }, // 403 machine_revoked
            { op: "activate", key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ", fp: "x" }, // 404 license_not_found
            { op: "deactivate", key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ", fp: "x" }, // 404 license_not_found
            { op: "activate", key: "not a key", fp: "x" } // 400 rest_invalid_param (before any batch)
          ]
          const before = probe.transactions
          const answers = yield* concurrently(calls)
          const used = probe.transactions - before
          return { answers, used, after: yield* stored([open, full, suspended, revokedFp], probe) }
        })
      yield* TestClock.setTime(T0)
      const batchProbe = newProbe()
      const aloneProbe = newProbe()
      const together = yield* Effect.provide(scenario(batchProbe), engine(batchProbe, { workers: 1, maxBatch: 128 }))
      const alone = yield* Effect.provide(scenario(aloneProbe), engine(aloneProbe, oneByOne))
      // 14 calls reach the batcher (the malformed key is refused before): one or two batches, mixed kinds each.
      expect(together.used).toBeLessThanOrEqual(2)
      expect(together.answers).toEqual([
        "201 new active",
        "200 on-1 inactive",
        "200 on-2 active",
        "machine_inactive",
        "200 off inactive",
        "machine_not_found",
        "machine_not_found",
        "machine_limit_exceeded",
        "200 first active",
        "license_suspended",
        "machine_not_found",
        "machine_revoked",
        "license_not_found",
        "license_not_found",
        "rest_invalid_param"
      ])
      expect(together.answers).toEqual(alone.answers)
      expect(together.after).toEqual(alone.after)
    }))

  it.effect("a batch whose write fails is re-run call by call: the others are answered, nothing is half-written", () =>
    Effect.gen(function*() {
      const scenario = (probe: Probe) =>
        Effect.gen(function*() {
          const licenses = yield* Licenses
          const fresh = (yield* licenses.create({ maxActivations: 10, validForDays: 30 })).license.key
          const used = (yield* licenses.create({})).license.key
          yield* callOf({ op: "activate", key: used, fp: "leaving" })
          yield* callOf({ op: "activate", key: used, fp: "beating" })
          probe.poisoned.add("poison")
          const calls: Array<Call> = [
            { op: "activate", key: fresh, fp: "a" }, // the first activation: starts relative validity
            { op: "activate", key: fresh, fp: "poison" }, // its machine write fails, batched or alone
            { op: "activate", key: fresh, fp: "b" },
            { op: "deactivate", key: used, fp: "leaving" },
            { op: "heartbeat", key: used, fp: "beating" },
            { op: "activate", key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ", fp: "x" }
          ]
          const answers = yield* concurrently(calls)
          return { answers, after: yield* stored([fresh, used], probe) }
        })
      yield* TestClock.setTime(T0)
      const batchProbe = newProbe()
      const aloneProbe = newProbe()
      const together = yield* Effect.provide(scenario(batchProbe), engine(batchProbe, { workers: 1, maxBatch: 128 }))
      const alone = yield* Effect.provide(scenario(aloneProbe), engine(aloneProbe, oneByOne))
      expect(together.answers).toEqual([
        "201 a active",
        "service_unavailable",
        "201 b active",
        "200 leaving inactive",
        "200 beating active",
        "license_not_found"
      ])
      expect(together.answers).toEqual(alone.answers)
      // Written once: one activation event each, one deactivation, the license changed once (first activation).
      expect(together.after).toEqual(alone.after)
      expect(together.after.events.filter((e) => e.startsWith("machine.activated"))).toHaveLength(4)
      expect(together.after.events.filter((e) => e.startsWith("machine.deactivated"))).toHaveLength(1)
      const first = Object.values(together.after.byKey)[0] as { revision: number; activatedAt: number; machines: Array<string> }
      expect(first.activatedAt).toBe(T0)
      expect(first.machines).toEqual(["a:active", "b:active"])
    }))

  it.effect("when every batched write fails, each call still runs alone and succeeds", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const probe = newProbe()
      const result = yield* Effect.gen(function*() {
        const key = (yield* Licenses.use((l) => l.create({ maxActivations: 5 }))).license.key
        probe.failBatchWrites = true
        const answers = yield* concurrently(Array.from({ length: 8 }, (_, i) => ({ op: "activate" as const, key, fp: `d-${i}` })))
        return { answers, after: yield* stored([key], probe) }
      }).pipe(Effect.provide(engine(probe, batched)))
      expect(result.answers.filter((a) => a.startsWith("201"))).toHaveLength(5)
      expect(result.answers.filter((a) => a === "machine_limit_exceeded")).toHaveLength(3)
      expect(result.after.events.filter((e) => e.startsWith("machine.activated"))).toHaveLength(5)
      expect(result.after.log).toHaveLength(8)
    }))
})
