/**
 * Webhooks (CONTRACT §11): register, list, change, delete and ping them, read their delivery log and redeliver;
 * and the background delivery that fans every outbox event out to the webhooks subscribed to it and POSTs it,
 * signed, at least once, with retries. The HTTP client is the {@link WebhookSender} an adapter provides (the
 * bundled server's runs on undici and refuses forbidden addresses at connect time).
 */
import { KeyObject } from "node:crypto"
import { Clock, Context, Duration, Effect, Layer, Metric, Schedule } from "effect"
import { logRoundFailure, yieldingToRequests } from "../shared/background.js"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import * as Metrics from "../shared/metrics.js"
import type { StoredEvent } from "../shared/model.js"
import { EventOutbox, type Page, type PageRequest, Store } from "../shared/ports.js"
import { Random } from "../shared/random.js"
import { MasterKey, type SealedSecretUnreadable } from "../signing/secrets.js"
import { deliveryNotFound, webhookNotFound, type WebhookNotFound } from "./errors.js"
import type { Webhook, WebhookDelivery, WebhookStatus } from "./model.js"
import { WebhookDeliveryQueue, WebhookRepository } from "./ports.js"
import {
  afterAttempt,
  type AttemptOutcome,
  checkEvents,
  checkUrl,
  defaultAttemptTimeoutMillis,
  defaultRetrySchedule,
  delivered,
  deliveriesOf,
  deliveryBody,
  deliveryHeaders,
  signingKeyOf,
  disabledEvent,
  leaseMillisFor,
  redeliver,
  webhookAfterAttempt,
  type WebhookReach
} from "./webhook.js"

/** One POST of a delivery: where, the headers (signature included) and the exact body signed. */
export interface WebhookRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * The HTTP client of deliveries. It never fails: a refused address, a timeout or a broken connection is an
 * `AttemptOutcome` of `Failed`. The default has no client and fails every attempt, saying so.
 */
export const WebhookSender = Context.Reference<{
  readonly send: (request: WebhookRequest) => Effect.Effect<AttemptOutcome>
}>("@lm/domain/WebhookSender", {
  defaultValue: () => ({
    send: () => Effect.succeed({ _tag: "Failed", error: "no HTTP client is configured for webhook deliveries" } as const)
  })
})

/** Settings of webhooks; each has a default. */
export interface WebhookSettingsShape extends WebhookReach {
  /** Seconds to wait after each failed attempt (`LM_WEBHOOK_RETRY_SCHEDULE`); spent: `failed`. */
  readonly retrySchedule: ReadonlyArray<number>
  /** How long one attempt may take in all (the sender enforces it). */
  readonly attemptTimeoutMillis: number
  /**
   * How long a worker holds a claimed delivery: longer than an attempt may take, so that no two workers hold one
   * delivery at once; a crashed worker's claims come back after it.
   */
  readonly leaseMillis: number
  /**
   * Deliveries claimed at once, and sent at once: one claim, one read of their webhooks, one of their events,
   * one write of their attempts. All are sent together, so that a batch ends within one attempt's time, well
   * inside the lease.
   */
  readonly batch: number
  /** Outbox events fanned out per transaction. */
  readonly dispatchBatch: number
}

export const WebhookSettings = Context.Reference<WebhookSettingsShape>("@lm/domain/WebhookSettings", {
  defaultValue: () => ({
    allowInsecure: false,
    allowPrivate: false,
    retrySchedule: defaultRetrySchedule,
    attemptTimeoutMillis: defaultAttemptTimeoutMillis,
    leaseMillis: leaseMillisFor(defaultAttemptTimeoutMillis),
    batch: 32,
    dispatchBatch: 500
  })
})

/** What a webhook create sets; PUT may set any of them and `status`. */
export interface WebhookInput {
  readonly name?: string | undefined
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<string> | undefined
  readonly status?: WebhookStatus | undefined
}

/** A new webhook with its secret: the only moment the secret is shown. */
export interface CreatedWebhook {
  readonly webhook: Webhook
  readonly secret: string
}

/** What a ping came to. */
export interface PingResult {
  readonly delivered: boolean
  readonly responseStatus: number | null
  readonly durationMs: number
  readonly error: string | null
}

/** What the master key seals a webhook secret for. */
const secretPurpose = "webhook secret"

type Op<A, E = never> = Effect.Effect<A, E | StorageUnavailable>

export class Webhooks extends Context.Service<Webhooks, {
  readonly create: (input: WebhookInput) => Op<CreatedWebhook, InvalidParam>
  readonly get: (id: number) => Op<Webhook, WebhookNotFound>
  readonly list: (page: PageRequest) => Op<Page<Webhook>>
  /** Changes name, url, events or status; `active` re-enables a disabled webhook (its failing streak forgotten). */
  readonly update: (id: number, input: WebhookInput) => Op<Webhook, WebhookNotFound | InvalidParam>
  /** Deletes the webhook and its deliveries. */
  readonly delete: (id: number) => Op<void, WebhookNotFound>
  /** Sends `webhook.ping` now and reports how it went (nothing is queued or retried). */
  readonly ping: (id: number) => Op<PingResult, WebhookNotFound | SealedSecretUnreadable>
  /** A webhook's deliveries, newest first. */
  readonly deliveries: (id: number, page: PageRequest) => Op<Page<WebhookDelivery>, WebhookNotFound>
  /** Queues one more attempt of a delivery now. */
  readonly redeliver: (id: number, deliveryId: number) => Op<WebhookDelivery, WebhookNotFound>
  /** Fans undispatched outbox events out to deliveries; returns how many events it handled. */
  readonly dispatchOnce: Op<number>
  /** Claims the deliveries due now and attempts each; returns how many it attempted. */
  readonly deliverDue: Op<number>
  /**
   * The background job: fans out and delivers until nothing is waiting, a batch of each at a time, yielding to
   * requests as one job (`yieldingToRequests`); returns how many deliveries it attempted.
   */
  readonly run: Op<number>
}>()("@lm/domain/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const store = yield* Store
      const repo = yield* WebhookRepository
      const queue = yield* WebhookDeliveryQueue
      const outbox = yield* EventOutbox
      const random = yield* Random
      const master = yield* MasterKey

      // Read once, from the layer's context (the engine provides them with the layer).
      const settings = Effect.succeed(yield* WebhookSettings)
      const sender = Effect.succeed(yield* WebhookSender)

      const get = Effect.fn("Webhooks.get")(function*(id: number) {
        const webhook = yield* repo.findById(id)
        if (webhook === undefined) return yield* webhookNotFound()
        return webhook
      })

      const checkName = (name: string) =>
        name.length > 255 ? Effect.fail(invalidParam("name", "must be at most 255 characters")) : Effect.succeed(name)

      const create = Effect.fn("Webhooks.create")(function*(input: WebhookInput) {
        const reach = yield* settings
        if (input.url === undefined) return yield* invalidParam("url", "is required")
        if (input.events === undefined) return yield* invalidParam("events", "is required")
        const url = yield* Effect.fromResult(checkUrl(input.url, reach))
        const events = yield* Effect.fromResult(checkEvents(input.events))
        const name = yield* checkName(input.name ?? "")
        const secret = `whsec_${Buffer.from(yield* random.bytes(24)).toString("hex")}`
        const now = yield* Clock.currentTimeMillis
        const webhook = yield* repo.insert({
          name,
          url,
          events,
          status: input.status ?? "active",
          sealedSecret: master.seal(secret, secretPurpose),
          failingSince: null,
          createdAt: now,
          updatedAt: now
        })
        return { webhook, secret }
      })

      const update = Effect.fn("Webhooks.update")(function*(id: number, input: WebhookInput) {
        const reach = yield* settings
        const webhook = yield* get(id)
        const url = input.url === undefined ? webhook.url : yield* Effect.fromResult(checkUrl(input.url, reach))
        const events = input.events === undefined ? webhook.events : yield* Effect.fromResult(checkEvents(input.events))
        const name = input.name === undefined ? webhook.name : yield* checkName(input.name)
        const status = input.status ?? webhook.status
        const reenabled = status === "active" && webhook.status !== "active"
        return yield* repo.update({
          ...webhook,
          name,
          url,
          events,
          status,
          failingSince: reenabled ? null : webhook.failingSince,
          updatedAt: yield* Clock.currentTimeMillis
        })
      })

      const remove = Effect.fn("Webhooks.delete")(function*(id: number) {
        if (!(yield* repo.delete(id))) return yield* webhookNotFound()
      })

      const ping = Effect.fn("Webhooks.ping")(function*(id: number) {
        const webhook = yield* get(id)
        const key = signingKeyOf(yield* Effect.fromResult(master.open(webhook.sealedSecret, secretPurpose)))
        const now = yield* Clock.currentTimeMillis
        const body = deliveryBody({ id: 0, type: "webhook.ping", occurredAt: now, data: { webhook_id: webhook.id } })
        const deliveryId = `ping-${Buffer.from(yield* random.bytes(8)).toString("hex")}`
        const { send } = yield* sender
        const outcome = yield* send({ url: webhook.url, body, headers: deliveryHeaders(key, now, body, { type: "webhook.ping", deliveryId }) })
        const durationMs = (yield* Clock.currentTimeMillis) - now
        return {
          delivered: delivered(outcome),
          responseStatus: outcome._tag === "Response" ? outcome.status : null,
          durationMs,
          error: outcome._tag === "Failed" ? outcome.error : delivered(outcome) ? null : `HTTP ${outcome.status}`
        }
      })

      const deliveries = Effect.fn("Webhooks.deliveries")(function*(id: number, page: PageRequest) {
        yield* get(id)
        return yield* queue.list(id, page)
      })

      const redeliverOne = Effect.fn("Webhooks.redeliver")(function*(id: number, deliveryId: number) {
        yield* get(id)
        const delivery = yield* queue.findById(id, deliveryId)
        if (delivery === undefined) return yield* deliveryNotFound()
        return yield* queue.update(redeliver(delivery, yield* Clock.currentTimeMillis))
      })

      /** One fan-out transaction: up to `dispatchBatch` undispatched events become deliveries. */
      const dispatchBatch = Effect.gen(function*() {
        const { dispatchBatch: batch } = yield* settings
        const handled = yield* store.transaction(
          Effect.gen(function*() {
            const events = yield* queue.claimUndispatched(batch)
            if (events.length === 0) return 0
            const active = yield* repo.listActive
            const now = yield* Clock.currentTimeMillis
            yield* queue.dispatch(events.map((e) => e.id), events.flatMap((event) => deliveriesOf(event, active, now)))
            return events.length
          })
        )
        return { done: handled, more: handled === batch }
      })

      const dispatchOnce = yieldingToRequests(dispatchBatch).pipe(Effect.withSpan("Webhooks.dispatchOnce"))

      type Found = { readonly webhook: Webhook; readonly key: KeyObject | SealedSecretUnreadable } | undefined

      /**
       * The webhooks of a batch of deliveries with their secrets opened (and made signing keys) once: the active
       * ones in one read (claims only take deliveries of active webhooks), any other one by id (it changed since
       * the claim).
       */
      const webhooksOf = (deliveries: ReadonlyArray<WebhookDelivery>) =>
        Effect.gen(function*() {
          const out = new Map<number, Found>()
          if (deliveries.length === 0) return out
          const wanted = new Set(deliveries.map((d) => d.webhookId))
          const active = new Map((yield* repo.listActive).filter((w) => wanted.has(w.id)).map((w) => [w.id, w]))
          for (const id of wanted) {
            const webhook = active.get(id) ?? (yield* repo.findById(id))
            if (webhook === undefined) {
              out.set(id, undefined)
              continue
            }
            const opened = master.open(webhook.sealedSecret, secretPurpose)
            out.set(id, { webhook, key: opened._tag === "Success" ? signingKeyOf(opened.success) : opened.failure })
          }
          return out
        })

      /** One attempt of a claimed delivery: what sending it came to (nothing recorded yet). */
      const sendOne = (delivery: WebhookDelivery, found: Found, event: StoredEvent | undefined): Effect.Effect<AttemptOutcome> =>
        Effect.gen(function*() {
          if (found === undefined || event === undefined) return { _tag: "Failed", error: "the webhook or its event is gone" } as const
          if (!(found.key instanceof KeyObject)) return { _tag: "Failed", error: found.key.message } as const
          const now = yield* Clock.currentTimeMillis
          const body = deliveryBody(event)
          const { send } = yield* sender
          return yield* send({
            url: found.webhook.url,
            body,
            headers: deliveryHeaders(found.key, now, body, { type: event.type, deliveryId: String(delivery.id) })
          })
        })

      /** The webhook's failing streak after an attempt (recorded already) of one of its deliveries. */
      const followStreak = (delivery: WebhookDelivery, found: Found, success: boolean, now: number) =>
        Effect.gen(function*() {
          // A success on a webhook that was not failing changes nothing: the common case needs no second read.
          if (found === undefined || (success && found.webhook.failingSince === null)) return
          // Re-read: other deliveries of the same webhook may have moved it meanwhile. Most failures change nothing
          // (the streak has started, the day is not over): a plain read says so.
          const seen = yield* repo.findById(delivery.webhookId)
          if (seen === undefined || webhookAfterAttempt(seen, success, now) === seen) return
          // A change is made under the webhook's lock, so that concurrent failures (in this process or another)
          // disable it, and announce it, once.
          const disabled = yield* store.transaction(Effect.gen(function*() {
            const latest = yield* repo.lockById(delivery.webhookId)
            if (latest === undefined) return undefined
            const next = webhookAfterAttempt(latest, success, now)
            if (next === latest) return undefined
            yield* repo.update(next)
            if (next.status !== "disabled" || latest.status === "disabled") return undefined
            // Announced in the transaction that disables it (the outbox).
            yield* outbox.append([disabledEvent(next, now)])
            return next
          }))
          if (disabled !== undefined) {
            yield* Effect.logWarning(`webhook ${disabled.id} disabled: every delivery to ${disabled.url} has failed for a day`)
          }
        })

      /**
       * Attempts a claimed batch: its webhooks and events read in two statements, the POSTs all at once, the
       * attempts recorded in one write, then the failing streaks of the webhooks involved.
       */
      const attemptBatch = (claimed: ReadonlyArray<WebhookDelivery>) =>
        Effect.gen(function*() {
          const { retrySchedule } = yield* settings
          const webhooks = yield* webhooksOf(claimed)
          const events = new Map((yield* outbox.findByIds([...new Set(claimed.map((d) => d.eventId))])).map((e) => [e.id, e]))
          const outcomes = yield* Effect.forEach(
            claimed,
            (delivery) => sendOne(delivery, webhooks.get(delivery.webhookId), events.get(delivery.eventId)),
            { concurrency: "unbounded" }
          )
          const now = yield* Clock.currentTimeMillis
          yield* queue.recordAttempts(claimed.map((delivery, i) => afterAttempt(delivery, outcomes[i]!, now, retrySchedule)))
          for (const outcome of outcomes) {
            yield* Metrics.increment(Metrics.webhookDeliveries({ result: delivered(outcome) ? "delivered" : "failed" }))
          }
          for (const [i, delivery] of claimed.entries()) {
            yield* followStreak(delivery, webhooks.get(delivery.webhookId), delivered(outcomes[i]!), now)
          }
        })

      /** One delivery batch: up to `batch` due deliveries claimed and attempted together. */
      const deliveryBatch = Effect.gen(function*() {
        const { batch, leaseMillis } = yield* settings
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* queue.claimDue(now, now + leaseMillis, batch)
        if (claimed.length > 0) yield* attemptBatch(claimed)
        return { done: claimed.length, more: claimed.length === batch }
      })

      const deliverDue = yieldingToRequests(deliveryBatch).pipe(Effect.withSpan("Webhooks.deliverDue"))

      // Fan-out and delivery as one job: a batch of each per step, so that under sustained load neither starves
      // the other and together they take at most the busy share.
      const run = yieldingToRequests(Effect.gen(function*() {
        const dispatched = yield* dispatchBatch
        const attempted = yield* deliveryBatch
        return { done: attempted.done, more: dispatched.more || attempted.more }
      })).pipe(
        // What is left for later rounds (retries not due yet, or more than this round could take).
        Effect.tap(() => Effect.flatMap(queue.countPending, (n) => Metric.update(Metrics.webhookBacklog, n))),
        Effect.withSpan("Webhooks.run")
      )

      return Webhooks.of({
        create,
        get,
        list: (page) => repo.list(page),
        update,
        delete: remove,
        ping,
        deliveries,
        redeliver: redeliverOne,
        dispatchOnce,
        deliverDue,
        run
      })
    })
  )

  /**
   * Delivery in the background for as long as the layer lives: every `interval`, {@link Webhooks} `run` (the new
   * outbox events fanned out and the due deliveries attempted). Failures are logged and the loop goes on.
   */
  static readonly layerBackground = (interval: Duration.Input) =>
    Layer.effectDiscard(
      Effect.gen(function*() {
        const webhooks = yield* Webhooks
        yield* webhooks.run.pipe(
          Effect.catchCause(logRoundFailure("webhook delivery failed")),
          Effect.repeat(Schedule.spaced(interval)),
          Effect.forkScoped
        )
      })
    )
}
