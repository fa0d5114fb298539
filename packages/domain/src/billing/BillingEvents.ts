/**
 * Provider-driven subscriptions (CONTRACT §20): `receive` takes a provider event the adapter verified and
 * normalised, finds its subscription (by the provider's subscription id, else by `lm_subscription_id`), and in one
 * transaction that locks the subscription decides the event (`billing.ts`), claims its event id and writes the
 * move with its outbox events. The claim is a unique record per provider event id, so an event is applied once
 * whichever process receives it; every receipt is answered with its outcome and recorded for `list`.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import * as Metrics from "../shared/metrics.js"
import { type Page, Store } from "../shared/ports.js"
import type { SubscriptionExists } from "../subscriptions/errors.js"
import type { Subscription } from "../subscriptions/model.js"
import { SubscriptionRepository } from "../subscriptions/ports.js"
import { Subscriptions } from "../subscriptions/Subscriptions.js"
import { decide, linkable } from "./billing.js"
import type { BillingEvent, BillingEventOutcome, ProviderEvent } from "./model.js"
import { BillingEventRepository, type BillingEventQuery } from "./ports.js"

/** What became of a received event. */
export interface ReceivedEvent {
  readonly outcome: BillingEventOutcome
  readonly subscriptionId: number | null
}

export class BillingEvents extends Context.Service<BillingEvents, {
  readonly receive: (event: ProviderEvent) => Effect.Effect<ReceivedEvent, SubscriptionExists | StorageUnavailable>
  readonly list: (query: BillingEventQuery) => Effect.Effect<Page<BillingEvent>, StorageUnavailable>
}>()("@lm/domain/BillingEvents") {
  static readonly layer = Layer.effect(
    BillingEvents,
    Effect.gen(function*() {
      const store = yield* Store
      const events = yield* BillingEventRepository
      const subscriptions = yield* SubscriptionRepository
      const service = yield* Subscriptions

      /** The event's subscription, locked: by the provider's subscription id, else by `lm_subscription_id`. */
      const lockSubscriptionOf = (event: ProviderEvent) =>
        Effect.gen(function*() {
          let found: Subscription | undefined
          if (event.externalId !== null) found = yield* subscriptions.findByExternalId(event.provider, event.externalId)
          if (found === undefined && event.lmSubscriptionId !== null) {
            const byId = yield* subscriptions.findById(event.lmSubscriptionId)
            if (byId !== undefined && linkable(byId, event)) found = byId
          }
          if (found === undefined) return undefined
          const locked = yield* subscriptions.lockById(found.id)
          // re-checked under the lock: another transaction may have linked it meanwhile
          return locked !== undefined && linkable(locked, event) ? locked : undefined
        })

      const receive = Effect.fn("BillingEvents.receive")(function*(event: ProviderEvent) {
        // the status a move led to, counted once committed (`lm_subscription_moves_total{to}`)
        let movedTo: string | undefined
        const received = yield* store.transaction(
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const subscription = yield* lockSubscriptionOf(event)
            const draft = (outcome: BillingEventOutcome) => ({
              provider: event.provider,
              eventId: event.eventId,
              type: event.type,
              externalId: event.externalId,
              subscriptionId: subscription?.id ?? null,
              outcome,
              occurredAt: event.occurredAt,
              receivedAt: now
            })
            const decision = subscription === undefined
              ? { outcome: "unmatched" as const }
              : decide(subscription, event, yield* events.lastAppliedAt(subscription.id), now)
            const claimed = yield* events.record(draft(decision.outcome))
            if (claimed === undefined) {
              // received before (here or by another process): recorded beside the first receipt, nothing moves
              yield* events.record(draft("duplicate"))
              return { outcome: "duplicate", subscriptionId: subscription?.id ?? null } satisfies ReceivedEvent
            }
            movedTo = undefined
            if (decision.outcome === "applied" && decision.change !== null) {
              yield* service.persistChange(decision.change, now)
              if (decision.change.subscription.status !== subscription?.status) movedTo = decision.change.subscription.status
            }
            return { outcome: decision.outcome, subscriptionId: subscription?.id ?? null } satisfies ReceivedEvent
          })
        )
        if (movedTo !== undefined) yield* Metrics.increment(Metrics.subscriptionMoves({ to: movedTo }))
        return received
      })

      return BillingEvents.of({ receive, list: (query) => events.list(query) })
    })
  )
}
