/**
 * The storage contract: one suite that every store runs (`storageContract(name, makeLayer)`). It checks the
 * ports' behaviour only through the ports, so it holds for the memory store, PGlite and PostgreSQL alike. The cases
 * of each port are in a file of their own (`licenses.ts`, `machines.ts`, ...); this file registers them all.
 *
 * Each case gets a fresh, empty store from `makeLayer` (on PGlite and PostgreSQL one database per file, put
 * back to its freshly migrated state before each case and checked to be so: `pg-support.ts`). Cases never keep a transaction open while another
 * store operation has to finish (a single-session store such as PGlite queues transactions).
 *
 * The event log: every store holds each entry until `prune` removes it, within a window of at least the newest
 * 1,000 entries (`Ports.ActivityLog`; the memory store holds only such a window, checked in its own tests). The
 * cases here write far fewer, so `count` sees every entry they wrote on every store.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { activityLogCases } from "./activity.js"
import { analyticsCases } from "./analytics.js"
import { apiKeyCases } from "./apiKeys.js"
import { auditCases } from "./audit.js"
import { billingCases } from "./billingEvents.js"
import { deliveryCases } from "./deliveries.js"
import { T0 } from "./fixtures.js"
import { generatorCases } from "./generators.js"
import { idempotencyCases } from "./idempotency.js"
import { licenseCases } from "./licenses.js"
import { machineCases } from "./machines.js"
import { outboxCases } from "./outbox.js"
import { policyCases } from "./policies.js"
import { releaseCases } from "./releases.js"
import { signingKeyCases } from "./signingKeys.js"
import { storeCases } from "./store.js"
import { subscriptionCases } from "./subscriptions.js"
import type { ContractTest, StorePorts } from "./support.js"
import { webhookCases } from "./webhooks.js"

export type { StorePorts } from "./support.js"

/**
 * Registers the contract's cases against a store. `makeLayer` must return a layer that builds a fresh, empty
 * store each time it is built.
 */
export const storageContract = (name: string, makeLayer: () => Layer.Layer<StorePorts, unknown>): void => {
  describe(`storage contract: ${name}`, () => {
    const test: ContractTest = (title, body) =>
      // The clock is set before the store is built: moving the TestClock afterwards would replay every tick of
      // the store's own timers (connection pools) across the jump.
      it.effect(title, () => Effect.andThen(TestClock.setTime(T0), Effect.provide(Effect.suspend(body), Layer.fresh(makeLayer()))))

    licenseCases(test)
    machineCases(test)
    releaseCases(test)
    generatorCases(test)
    policyCases(test)
    apiKeyCases(test)
    auditCases(test)
    signingKeyCases(test)
    outboxCases(test)
    activityLogCases(test)
    analyticsCases(test)
    storeCases(test)
    subscriptionCases(test)
    billingCases(test)
    webhookCases(test)
    deliveryCases(test)
    idempotencyCases(test)
  })
}
