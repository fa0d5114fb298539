/**
 * Subscription management (CONTRACT §10): create (binding an existing license or creating one), get, list,
 * update, the actions (pause, resume, cancel, renew, switch), renewal history, and the period-end job. Every
 * write runs in one transaction that locks the subscription and then its license, writes both (the license
 * follows the subscription: `Subscription.followLicense`) and appends both's events to the outbox; the license
 * goes through the `LicenseRepository`, so the validation cache and the CRL see the change at once.
 */
import { Clock, Context, Duration, Effect, Layer, Result, Schedule } from "effect"
import { type CreateLicenseInput, Licenses } from "../licensing/Licenses.js"
import {
  type GeneratorNotFound,
  type PolicyNotFound,
  type LicenseExists,
  type LicenseNotFound,
  licenseNotFound
} from "../licensing/errors.js"
import { parseKey } from "../licensing/keys.js"
import { type LicenseView, viewLicense } from "../licensing/machine.js"
import type { License } from "../licensing/model.js"
import { LicenseRepository, MachineRepository } from "../licensing/ports.js"
import { yieldingToRequests } from "../shared/background.js"
import * as Metrics from "../shared/metrics.js"
import { invalidParam, type InvalidParam, type InvalidTransition, type StorageUnavailable } from "../shared/errors.js"
import { EventOutbox, type Page, type PageRequest, Store } from "../shared/ports.js"
import { type SubscriptionExists, type SubscriptionNotFound, subscriptionNotFound } from "./errors.js"
import type { RenewalRecord, Subscription as SubscriptionRecord } from "./model.js"
import { PaymentGateway, type SubscriptionQuery, SubscriptionRepository } from "./ports.js"
import {
  cancel,
  created,
  dueMove,
  applyDue,
  followLicense,
  nextDueAt,
  type NewSubscription,
  pause,
  paymentDeclined,
  type PlanSwitch,
  renew,
  resume,
  signup,
  type SubscriptionChange,
  type SubscriptionUpdate,
  switchPlan,
  update
} from "./subscription.js"

/** Settings of the subscription engine. */
export const SubscriptionSettings = Context.Reference<{
  /** Days after an unpaid period end before the subscription goes on-hold (`LM_PAYMENT_GRACE_DAYS`, default 3). */
  readonly paymentGraceDays: number
}>("@lm/domain/SubscriptionSettings", { defaultValue: () => ({ paymentGraceDays: 3 }) })

/** POST /subscriptions: the subscription's fields and how its license is found or made. */
export interface CreateSubscriptionInput {
  readonly subscription: NewSubscription
  /** Binds this existing license. */
  readonly licenseKey?: string | undefined
  /** Otherwise a license is created with these fields (or from `generator_id` inside them). */
  readonly license?: CreateLicenseInput | undefined
}

/** A subscription with its bound license (GET one). */
export interface SubscriptionDetail {
  readonly subscription: SubscriptionRecord
  readonly license: LicenseView
}

/** A switch of plan, which may also change the license's seat limit. */
export interface SwitchInput extends PlanSwitch {
  readonly maxActivations?: number | null | undefined
}

type Errors = SubscriptionNotFound | InvalidTransition | InvalidParam | StorageUnavailable

/** Notes in `moves` the status `after` moved to, when it differs from `before`'s. */
const noteMove = (moves: Array<string>, before: SubscriptionRecord, after: SubscriptionRecord): void => {
  if (after.status !== before.status) moves.push(after.status)
}

/** Counts committed status changes (`lm_subscription_moves_total{to}`). */
const countMoves = (moves: ReadonlyArray<string>) =>
  Effect.forEach(moves, (to) => Metrics.increment(Metrics.subscriptionMoves({ to })), { discard: true })

/** Subscriptions moved by the clock per transaction. */
const BATCH = 200

export class Subscriptions extends Context.Service<Subscriptions, {
  readonly create: (input: CreateSubscriptionInput) => Effect.Effect<
    SubscriptionDetail,
    InvalidParam | LicenseNotFound | LicenseExists | GeneratorNotFound | PolicyNotFound | SubscriptionExists | StorageUnavailable
  >
  readonly get: (id: number) => Effect.Effect<SubscriptionDetail, SubscriptionNotFound | StorageUnavailable>
  readonly list: (query: SubscriptionQuery) => Effect.Effect<Page<SubscriptionRecord>, StorageUnavailable>
  /** Fails with `SubscriptionExists` when the new `externalId` is another subscription's at that provider. */
  readonly update: (id: number, patch: SubscriptionUpdate) => Effect.Effect<SubscriptionDetail, Errors | SubscriptionExists>
  readonly pause: (id: number) => Effect.Effect<SubscriptionDetail, Errors>
  readonly resume: (id: number) => Effect.Effect<SubscriptionDetail, Errors>
  readonly cancel: (id: number, atPeriodEnd: boolean) => Effect.Effect<SubscriptionDetail, Errors>
  /** Early renewal or a payment reported to the bundled `PaymentGateway` (with its transaction id). */
  readonly renew: (id: number, transactionId: string | null) => Effect.Effect<SubscriptionDetail, Errors>
  readonly switchPlan: (id: number, input: SwitchInput) => Effect.Effect<SubscriptionDetail, Errors>
  readonly renewals: (id: number, page: PageRequest) => Effect.Effect<Page<RenewalRecord>, SubscriptionNotFound | StorageUnavailable>
  /**
   * Writes a change another feature computed on a subscription it locked (`SubscriptionRepository.lockById`),
   * inside that feature's transaction: the license follows, and both's events go to the outbox (billing's
   * provider events).
   */
  readonly persistChange: (change: SubscriptionChange, now: number) => Effect.Effect<SubscriptionDetail, SubscriptionExists | StorageUnavailable>
  /** Makes every move the clock has due now (trial end, period end, payment failed, end date); returns how many. */
  readonly runDue: Effect.Effect<number, StorageUnavailable>
}>()("@lm/domain/Subscriptions") {
  static readonly layer = Layer.effect(
    Subscriptions,
    Effect.gen(function*() {
      const store = yield* Store
      const subscriptions = yield* SubscriptionRepository
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const outbox = yield* EventOutbox
      const licenseService = yield* Licenses
      const settings = () => Effect.map(SubscriptionSettings, (s) => s.paymentGraceDays)

      const detail = (subscription: SubscriptionRecord, license: License, now: number) =>
        Effect.map(machines.listActive(license.id), (active): SubscriptionDetail => ({ subscription, license: viewLicense(license, active, now) }))

      /**
       * Writes a change (inside the caller's transaction, the subscription locked): the license follows, then
       * both rows, the renewal record and every event. Answers the written subscription and license.
       */
      const persistRows = (change: SubscriptionChange, now: number, licensePatch: Partial<License> = {}) =>
        Effect.gen(function*() {
          const grace = yield* settings()
          const locked = yield* licenses.lockById(change.subscription.licenseId)
          if (locked === undefined) return yield* Effect.die(new Error(`subscription ${change.subscription.id} lost its license`))
          const patched = Object.keys(licensePatch).length === 0 ? locked : { ...locked, ...licensePatch }
          const follow = followLicense(patched, change.subscription, now)
          const saved = yield* subscriptions.update(change.subscription, nextDueAt(change.subscription, grace))
          if (change.renewal !== null) yield* subscriptions.insertRenewal(saved.id, change.renewal)
          const license = follow.changed || patched !== locked
            ? yield* licenses.update(follow.changed ? follow.license : { ...patched, updatedAt: now, revision: locked.revision + 1 })
            : locked
          yield* outbox.append([...change.events, ...follow.events])
          return { saved, license }
        })

      /** {@link persistRows}, answered with the detail a route shows (the period-end job skips that read). */
      const persist = (change: SubscriptionChange, now: number, licensePatch: Partial<License> = {}) =>
        Effect.flatMap(persistRows(change, now, licensePatch), ({ license, saved }) => detail(saved, license, now))

      /** Runs a pure change on the locked subscription and persists it; a change of status is counted once committed. */
      const writeAny = <E>(
        id: number,
        change: (subscription: SubscriptionRecord, now: number) => Result.Result<SubscriptionChange, E>,
        licensePatch: Partial<License> = {}
      ) => {
        const moves: Array<string> = []
        return store.transaction(
          Effect.gen(function*() {
            // A transaction run again (after a deadlock) notes its moves again.
            moves.length = 0
            const subscription = yield* subscriptions.lockById(id)
            if (subscription === undefined) return yield* subscriptionNotFound()
            const now = yield* Clock.currentTimeMillis
            const result = yield* Effect.fromResult(change(subscription, now))
            noteMove(moves, subscription, result.subscription)
            return yield* persist(result, now, licensePatch)
          })
        ).pipe(Effect.tap(() => countMoves(moves)))
      }

      /**
       * {@link writeAny} for a move that keeps the provider link (every one but `update`), so no `externalId` can
       * clash.
       */
      const write = <E>(
        id: number,
        change: (subscription: SubscriptionRecord, now: number) => Result.Result<SubscriptionChange, E>,
        licensePatch: Partial<License> = {}
      ) => Effect.catchTag(writeAny(id, change, licensePatch), "SubscriptionExists", Effect.die)

      const create = Effect.fn("Subscriptions.create")(function*(input: CreateSubscriptionInput) {
        const now = yield* Clock.currentTimeMillis
        const made = yield* Effect.fromResult(signup(input.subscription, now))
        const grace = yield* settings()
        return yield* store.transaction(
          Effect.gen(function*() {
            let license: License
            if (input.licenseKey !== undefined) {
              const key = yield* Effect.fromResult(parseKey(input.licenseKey))
              const found = yield* licenses.lockByKey(key)
              if (found === undefined) return yield* licenseNotFound()
              if (found.subscriptionId !== null) {
                const bound = yield* subscriptions.findById(found.subscriptionId)
                if (bound !== undefined && bound.status !== "cancelled" && bound.status !== "expired") {
                  return yield* invalidParam("license_key", "the license is already bound to a live subscription")
                }
              }
              if (found.state === "terminated") return yield* invalidParam("license_key", "the license is terminated")
              license = found
            } else {
              const view = yield* licenseService.create({ ...input.license, userId: input.license?.userId ?? input.subscription.userId })
              license = (yield* licenses.lockById(view.license.id))!
            }
            const inserted = yield* subscriptions.insert({ ...made.draft, licenseId: license.id }, null)
            const follow = followLicense({ ...license, subscriptionId: inserted.id }, inserted, now)
            const saved = yield* subscriptions.update(inserted, nextDueAt(inserted, grace))
            yield* subscriptions.insertRenewal(saved.id, made.renewal)
            const bound = yield* licenses.update({ ...follow.license, subscriptionId: inserted.id, updatedAt: now, revision: license.revision + 1 })
            yield* outbox.append([created(saved, now), ...follow.events])
            return yield* detail(saved, bound, now)
          })
        )
      })

      const get = Effect.fn("Subscriptions.get")(function*(id: number) {
        const subscription = yield* subscriptions.findById(id)
        if (subscription === undefined) return yield* subscriptionNotFound()
        const license = yield* licenses.findById(subscription.licenseId)
        if (license === undefined) return yield* subscriptionNotFound()
        return yield* detail(subscription, license, yield* Clock.currentTimeMillis)
      })

      const renewals = Effect.fn("Subscriptions.renewals")(function*(id: number, page: PageRequest) {
        if ((yield* subscriptions.findById(id)) === undefined) return yield* subscriptionNotFound()
        return yield* subscriptions.listRenewals(id, page)
      })

      /** One batch of the clock's moves in one transaction: returns [claimed, moved]; its moves counted once committed. */
      const dueBatch = Effect.suspend(() => {
        const moves: Array<string> = []
        return store.transaction(Effect.gen(function*() {
          moves.length = 0
          const now = yield* Clock.currentTimeMillis
          const grace = yield* settings()
          const claimed = yield* subscriptions.claimDue(now, BATCH)
          let moved = 0
          for (const subscription of claimed) {
            const due = dueMove(subscription, now, grace)
            if (due === null) {
              // The stored due time was stale (the grace setting changed): store the true one.
              yield* Effect.catchTag(subscriptions.update(subscription, nextDueAt(subscription, grace)), "SubscriptionExists", Effect.die)
              continue
            }
            const change = applyDue(subscription, due, now)
            if (Result.isFailure(change)) continue
            noteMove(moves, subscription, change.success.subscription)
            // the clock never changes a provider link, so no external id can clash here
            yield* Effect.catchTag(persistRows(change.success, now), "SubscriptionExists", Effect.die)
            moved++
            // Lets the event loop answer requests between moves: on PGlite a statement inside a transaction holds
            // this thread until it is answered, so a batch would otherwise hold it from its first move to its last.
            yield* Effect.yieldNow
          }
          return [claimed.length, moved] as const
        })).pipe(Effect.tap(() => countMoves(moves)))
      })

      // The job yields to the requests the process serves (`yieldingToRequests`): under saturation moves lag and
      // catch up when the load drops. A subscription may have several moves due (a trial that ended and a payment
      // since): batches run until one claims fewer than a batch and moves nothing.
      const runDue = yieldingToRequests(Effect.map(dueBatch, ([claimed, moved]) => ({ done: moved, more: !(claimed < BATCH && moved === 0) }))).pipe(
        Effect.withSpan("Subscriptions.runDue")
      )

      return Subscriptions.of({
        create,
        get,
        list: (query) => subscriptions.list(query),
        update: (id, patch) => writeAny(id, (s, now) => update(s, patch, now)),
        pause: (id) => write(id, pause),
        resume: (id) => write(id, resume),
        cancel: (id, atPeriodEnd) => write(id, (s, now) => cancel(s, atPeriodEnd, now)),
        renew: (id, transactionId) =>
          Effect.gen(function*() {
            // the payment goes through the gateway first (outside the transaction: a provider may be slow)
            const subscription = yield* subscriptions.findById(id)
            if (subscription === undefined) return yield* subscriptionNotFound()
            const gateway = yield* PaymentGateway
            const outcome = yield* gateway.collect({ subscriptionId: id, amount: subscription.amount, currency: subscription.currency, transactionId })
            return yield* write(id, (s, now) =>
              outcome.status === "paid" ? renew(s, now, outcome.transactionId) : paymentDeclined(s, now, outcome.transactionId))
          }),
        switchPlan: (id, input) =>
          write(id, (s, now) => switchPlan(s, input, now), input.maxActivations === undefined ? {} : { maxActivations: input.maxActivations }),
        renewals,
        persistChange: persist,
        runDue
      })
    })
  )

  /** Runs the period-end job every `interval` for as long as the layer lives (catching up at once on start). */
  static readonly layerBackground = (interval: Duration.Input) =>
    Layer.effectDiscard(
      Effect.gen(function*() {
        const service = yield* Subscriptions
        yield* service.runDue.pipe(
          Effect.tap((n) => (n > 0 ? Effect.logInfo(`subscriptions: ${n} move(s) made by the clock`) : Effect.void)),
          Effect.catchCause((cause) => Effect.logWarning("subscription job failed", cause)),
          Effect.repeat(Schedule.spaced(interval)),
          Effect.forkScoped
        )
      })
    )
}

