/** The storage contract against a real PostgreSQL server: runs whenever DATABASE_URL is set (CI sets it). */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import { ActivityRecorder, License, Licenses, Licensing, Ports, Random, Subscriptions } from "@lm/domain"
import { layerPostgresStore } from "@lm/storage-pg"
import { freshTokens } from "../../packages/domain/test/fixtures.js"
import { freshDatabase, reusedPostgresStores } from "./pg-support.js"
import { storageContract } from "./contract.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

/**
 * A fresh database and two "processes" on it: `Licensing` and the store, each with its own connection pool
 * (built for the scope).
 */
const twoProcesses = (name: string) =>
  Effect.gen(function*() {
    const dbUrl = yield* freshDatabase(url, `${name}_${process.pid}_${Date.now()}`)
    const processLayer = () =>
      Licensing.layer.pipe(
        Layer.provide(Layer.merge(ActivityRecorder.layerDiscard, freshTokens)),
        Layer.provideMerge(layerPostgresStore({ url: dbUrl, maxConnections: 8 }))
      )
    return yield* Effect.all([Layer.build(Layer.fresh(processLayer())), Layer.build(Layer.fresh(processLayer()))])
  })

// Needs a real PostgreSQL server, so it runs only when DATABASE_URL is set (CI sets it; e.g.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test).
describe.skipIf(url === "")("on PostgreSQL (DATABASE_URL)", () => {
  storageContract("postgres", reusedPostgresStores(url))

  describe("postgres: two connection pools on one database (two server processes)", () => {
    it.live("two period-end jobs running at once never make a subscription's move twice", () =>
      Effect.gen(function*() {
        const dbUrl = yield* freshDatabase(url, `lm_two_jobs_${process.pid}_${Date.now()}`)
        const processLayer = () =>
          Subscriptions.layer.pipe(
            Layer.provideMerge(Licenses.layer),
            Layer.provide(Random.layerCrypto),
            Layer.provideMerge(layerPostgresStore({ url: dbUrl, maxConnections: 4 }))
          )
        const [a, b] = yield* Effect.all([Layer.build(Layer.fresh(processLayer())), Layer.build(Layer.fresh(processLayer()))])
        const start = Date.now() - 40 * 86_400_000
        const ids = yield* Effect.forEach(Array.from({ length: 60 }, (_, i) => i), (i) =>
          Effect.provideContext(
            Subscriptions.use((s) =>
              s.create({
                subscription: { userId: i + 1, productId: null, billingPeriod: "month", billingInterval: 1, amount: 1000, currency: "USD", paymentMethod: null, trialDays: 0, startDate: start, endDate: null, items: [] }
              })
            ),
            a
          ).pipe(Effect.map((d) => d.subscription.id)), { concurrency: 4 })
        // every subscription's period ended unpaid more than the grace days ago: one payment_failed move each
        const moved = yield* Effect.all([
          Effect.provideContext(Subscriptions.use((s) => s.runDue), a),
          Effect.provideContext(Subscriptions.use((s) => s.runDue), b)
        ], { concurrency: 2 })
        assert.strictEqual(moved[0] + moved[1], 60)
        const repo = yield* Effect.provideContext(Ports.SubscriptionRepository, b)
        for (const id of ids) {
          const renewals = yield* repo.listRenewals(id, { page: 1, perPage: 10 })
          assert.deepStrictEqual(renewals.items.map((r) => [r.type, r.status]), [["signup", "paid"], ["renewal", "failed"]])
          assert.strictEqual((yield* repo.findById(id))!.status, "on-hold")
        }
        const outbox = yield* Effect.provideContext(Ports.EventOutbox, a)
        const failed = (yield* outbox.readAfter(0, 10_000)).filter((e) => e.type === "subscription.payment_failed")
        assert.strictEqual(failed.length, 60)
      }).pipe(Effect.scoped), { timeout: 120_000 })

    it.live("racing for a license's last seats never over-allocates", () =>
      Effect.gen(function*() {
        const [a, b] = yield* twoProcesses("lm_two_pools")
        const licenses = yield* Effect.provideContext(Ports.LicenseRepository, a)
        const license = yield* licenses.insert(License.newLicenseDraft("RACE-SEAT-AAAA-BBBB", { maxActivations: 3 }, "api", null, Date.now()))
        const activate = (ctx: typeof a, i: number) =>
          Effect.provideContext(
            Effect.flatMap(Licensing, (l) => l.activate({ licenseKey: license.key, facts: { fingerprint: `race-${i}` }, ipAddress: null })),
            ctx
          ).pipe(Effect.exit)
        const exits = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => activate(i % 2 === 0 ? a : b, i), {
          concurrency: "unbounded"
        })
        const created = exits.filter((e) => Exit.isSuccess(e) && e.value.created).length
        const refused = exits.filter((e) => Exit.isFailure(e) && (Cause.squash(e.cause) as { _tag?: string })._tag === "MachineLimitExceeded").length
        assert.strictEqual(created, 3)
        assert.strictEqual(refused, 97)
        const machines = yield* Effect.provideContext(Ports.MachineRepository, b)
        assert.strictEqual((yield* machines.listActive(license.id)).length, 3)
      }).pipe(Effect.scoped), { timeout: 120_000 })

    it.live("batches locking many licenses from two processes at once neither deadlock nor over-allocate", () =>
      Effect.gen(function*() {
        const [a, b] = yield* twoProcesses("lm_two_pools_many")
        const licenses = yield* Effect.provideContext(Ports.LicenseRepository, a)
        const keys = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), (i) =>
          Effect.map(
            licenses.insert(License.newLicenseDraft(`MANY-SEAT-AAA${i}-BBBB`, { maxActivations: 4 }, "api", null, Date.now())),
            (license) => license.key
          ))
        // 400 activations, each on one of 8 licenses, alternating processes: batches of both processes lock
        // overlapping sets of licenses (the keys of calls arrive in every order).
        const exits = yield* Effect.forEach(Array.from({ length: 400 }, (_, i) => i), (i) =>
          Effect.provideContext(
            Effect.flatMap(Licensing, (l) => l.activate({ licenseKey: keys[(i * 5) % 8]!, facts: { fingerprint: `many-${i}` }, ipAddress: null })),
            i % 2 === 0 ? a : b
          ).pipe(Effect.exit), { concurrency: "unbounded" })
        const created = exits.filter((e) => Exit.isSuccess(e) && e.value.created).length
        const refused = exits.filter((e) => Exit.isFailure(e) && (Cause.squash(e.cause) as { _tag?: string })._tag === "MachineLimitExceeded").length
        assert.strictEqual(created, 32)
        assert.strictEqual(refused, 368)
        const machines = yield* Effect.provideContext(Ports.MachineRepository, b)
        for (const key of keys) {
          const license = (yield* licenses.findByKey(key))!
          assert.strictEqual((yield* machines.listActive(license.id)).length, 4, key)
        }
      }).pipe(Effect.scoped), { timeout: 120_000 })
  })
})
