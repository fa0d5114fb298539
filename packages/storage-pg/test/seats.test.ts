/**
 * The seat rule's SQL (`repositories/seats.ts`, used by every query that finds or counts seat holders) agrees with
 * the domain's rule, `Machine.holdsSeat`, on random machines under random seat rules, at random times and at each
 * machine's deadline and the milliseconds around it: on PGlite, and on PostgreSQL when DATABASE_URL is set. Each
 * machine is stored through the store's port with the seat deadline the domain writes (`Machine.seatDeadline` while
 * active, none once deactivated).
 */
import { assert, describe, layer } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Machine, type Model, Ports } from "@lm/domain"
import { layerOnClient, layerPostgres, PgliteTemplate } from "@lm/storage-pg"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import { freshDatabase } from "../../../test/storage-contract/pg-support.js"
import { DAY, licenseDraft, machineDraft, T0 } from "../../../test/storage-contract/fixtures.js"
import { holdsSeat } from "../src/repositories/seats.js"
import { serviceUrl } from "../../../test/support/services.js"

const HOUR = 3_600_000

/** A machine of a license with these seat rules, and a time to ask at (relative to T0). */
const machineArb = fc.record({
  rules: fc.record({
    isFloating: fc.boolean(),
    leaseDuration: fc.integer({ min: 60, max: 7_200 }),
    requireHeartbeat: fc.boolean(),
    heartbeatInterval: fc.integer({ min: 60, max: 3_600 })
  }),
  status: fc.constantFrom<Model.MachineStatus>("active", "active", "inactive", "revoked"),
  activatedAfter: fc.integer({ min: 0, max: DAY }),
  lastHeartbeatAfter: fc.option(fc.integer({ min: 0, max: DAY }), { nil: null }),
  leaseEndsAfter: fc.option(fc.integer({ min: -HOUR, max: 3 * HOUR }), { nil: null }),
  askedAfter: fc.integer({ min: -DAY, max: 3 * DAY })
})

let fingerprints = 0

/** Stores each machine (on a license of its own) and compares the SQL's answer with the rule at each time. */
const agrees = (machines: ReadonlyArray<typeof machineArb extends fc.Arbitrary<infer A> ? A : never>) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const licenses = yield* Ports.LicenseRepository
    const repository = yield* Ports.MachineRepository
    for (const m of machines) {
      const license = yield* licenses.insert(licenseDraft({ key: `SEAT-${++fingerprints}-ABCD-EFGH`, ...m.rules }))
      const activatedAt = T0 + m.activatedAfter
      const lastHeartbeatAt = m.lastHeartbeatAfter === null ? null : activatedAt + m.lastHeartbeatAfter
      const timing = {
        activatedAt,
        lastHeartbeatAt,
        leaseExpiresAt: m.leaseEndsAfter === null ? null : (lastHeartbeatAt ?? activatedAt) + m.leaseEndsAfter
      }
      const deadline = Machine.seatDeadline(timing, license)
      const stored = yield* repository.insert(machineDraft(license.id, `seat-fp-${fingerprints}`, {
        ...timing,
        status: m.status,
        seatDeadline: m.status === "active" ? deadline : null
      }))
      const times = [T0 + m.askedAfter, ...(deadline === null ? [] : [deadline - 1, deadline, deadline + 1])]
      for (const at of times) {
        const rows = yield* sql`SELECT m.id FROM lm_machines m WHERE m.id = ${stored.id} AND ${holdsSeat(sql, "m", at)}`
        assert.strictEqual(rows.length === 1, Machine.holdsSeat(stored, license, at), `${JSON.stringify({ m, at, deadline })}`)
      }
    }
  })

/** Registers the property on the store of `store`. */
const seatRuleAgrees = (name: string, store: Layer.Layer<PgClient.PgClient | Ports.StorePorts, unknown>) =>
  layer(store, { excludeTestServices: true, timeout: "300 seconds" })(name, (it) => {
    it.effect("the seat rule's SQL answers as Machine.holdsSeat on random machines, at their deadlines and around them", () =>
      Effect.flatMap(Effect.context<PgClient.PgClient | Ports.StorePorts>(), (context) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.array(machineArb, { minLength: 1, maxLength: 8 }), (machines) =>
              Effect.runPromiseWith(context)(agrees(machines))),
            { numRuns: 40 }
          )
        )))
  })

seatRuleAgrees("seat rule on PGlite", layerOnClient.pipe(Layer.provideMerge(PgliteTemplate.layerTemporaryMigrated)))

const url = serviceUrl("DATABASE_URL")

describe.skipIf(url === "")("on PostgreSQL (DATABASE_URL)", () => {
  seatRuleAgrees(
    "seat rule on PostgreSQL",
    Layer.unwrap(
      Effect.suspend(() => freshDatabase(url ?? "", `lm_seats_${process.pid}_${Date.now()}`)).pipe(
        Effect.map((dbUrl) => layerOnClient.pipe(Layer.provideMerge(layerPostgres({ url: dbUrl, maxConnections: 2 }))))
      )
    )
  )
})
