/**
 * The webhooks service on the memory store (and PostgreSQL with DATABASE_URL): a webhook whose attempts have failed for a day is disabled, and
 * `webhook.disabled` is written once, even when many of its deliveries fail at the same moment (they re-read it
 * under its lock), and nothing is queued for it afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MasterKey, Ports, Webhooks } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { DAY, seededRandom, T0 } from "./fixtures.js"
import { serviceUrl } from "../../../test/support/services.js"

/** PostgreSQL joins when DATABASE_URL names a server: there concurrent transactions really overlap. */
const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Record<string, () => Layer.Layer<Ports.StorePorts, unknown>> = {
  memory: () => MemoryStore.layer,
  ...(postgresUrl === "" ? {} : { postgres: () => freshPostgresStore(postgresUrl) })
}

/** The webhooks service on a fresh store, at T0; its default sender fails every attempt (no HTTP client). */
const onWebhooks = <A, E, R>(store: () => Layer.Layer<Ports.StorePorts, unknown>, body: Effect.Effect<A, E, R>) =>
  TestClock.setTime(T0).pipe(Effect.andThen(Effect.provide(body, Webhooks.layer.pipe(
    Layer.provideMerge(store()),
    Layer.provide(MasterKey.layerEphemeral),
    Layer.provide(seededRandom(1)),
    Layer.fresh
  ))))

describe.each(Object.entries(stores))("disabling a failing webhook (%s)", (_name, store) => {
  it.effect("many deliveries failing at once disable it once, with one webhook.disabled; nothing is queued for it after", () =>
    onWebhooks(store, Effect.gen(function*() {
      const service = yield* Webhooks
      const repo = yield* Ports.WebhookRepository
      const queue = yield* Ports.WebhookDeliveryQueue
      const outbox = yield* Ports.EventOutbox
      // The default sender fails every attempt, as a dead receiver would.
      const { webhook } = yield* service.create({ url: "https://hooks.example.com/lm", events: ["*"] })
      yield* repo.update({ ...webhook, failingSince: T0 - DAY })
      const events = Array.from({ length: 40 }, (_, i) => ({
        type: "license.created" as const,
        occurredAt: T0,
        licenseId: null,
        machineId: null,
        data: { license_key: `KEY-${i}` }
      }))
      yield* outbox.append(events)
      expect(yield* service.dispatchOnce).toBe(40)
      // Claimed 16 at a time and attempted concurrently.
      expect(yield* service.deliverDue).toBeGreaterThanOrEqual(16)
      const written = (yield* outbox.readAfter(0, 1000)).filter((e) => e.type === "webhook.disabled")
      expect(written).toHaveLength(1)
      expect(written[0]!.data).toMatchObject({ webhook: { id: webhook.id, status: "disabled" }, failing_since: new Date(T0 - DAY).toISOString() })
      expect((yield* service.get(webhook.id)).status).toBe("disabled")
      // Its own announcement is not queued for it.
      yield* service.dispatchOnce
      const log = yield* queue.list(webhook.id, { page: 1, perPage: 100 })
      expect(log.total).toBe(40)
      expect(log.items.every((d) => d.type === "license.created")).toBe(true)
    })), 60_000)
})
