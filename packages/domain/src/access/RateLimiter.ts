/**
 * The rate limiter (CONTRACT §11): per client IP and per (IP, license key) on the public routes, per API key on
 * management routes, and failed management logins per client IP; token buckets of `rateLimit.ts`.
 *
 * Every request is decided in process, from local buckets, with no round trip. When the deployment shares
 * limits (`SharedRateLimits`: PostgreSQL or Redis), a background fiber reconciles every `syncEveryMillis`
 * (default 200 ms): it sends, per bucket, the tokens taken here since the last round as one batched `advance`, and
 * adopts the shared `tat` that comes back (which holds every process's takes). The over-admission this allows: a
 * process decides on a view at most one round old, so across N processes a key may get, before each one's next
 * round, up to (N - 1) × (what its bucket held at the last round + rate × round) more than one process alone would
 * admit; a bucket first seen in a process starts full there, so the worst case is (N - 1) × (burst + rate ×
 * round). Every admitted request is still counted in the shared bucket, so the excess is a debt: the processes
 * then refuse until it is repaid, and over any longer window the admitted total stays within burst + rate × t +
 * that excess. A refused request takes nothing. If the shared store cannot be reached the limiter carries on
 * locally and sends the takes at a later round.
 */
import { Clock, Context, Effect, Layer, Schedule, Semaphore } from "effect"
import { ActivityRecorder } from "../activity/ActivityRecorder.js"
import type { ActivityKind } from "../activity/model.js"
import { activityKinds } from "../activity/model.js"
import * as Metrics from "../shared/metrics.js"
import { normaliseLicenseKey } from "../verify/licenseKey.js"
import { type RateLimited, rateLimited } from "./errors.js"
import { SharedRateLimits } from "./ports.js"
import {
  advance,
  bucketName,
  defaultRateLimitSettings,
  holdsToken,
  type RateLimit,
  type RateLimitSettings,
  retryAfterSeconds,
  tokenMillis,
  waitMillis
} from "./rateLimit.js"

export interface RateLimiterOptions {
  /** How often local buckets reconcile with the shared ones (default 200 ms). */
  readonly syncEveryMillis?: number
}

/** What a public request is, for its limits and for the event log. */
export interface PublicRequest {
  /** The route, e.g. `validate` or `crl`; refusals of the client calls are written to the event log. */
  readonly endpoint: string
  /** The client IP; undefined (a unix socket) is one bucket of its own. */
  readonly ip: string | undefined
  /** The license key the request names (trimmed and upper-cased here), if any. */
  readonly licenseKey: string | undefined
}

/** A local bucket: the `tat` this process knows, and tokens taken here not yet sent to the shared bucket. */
interface Local {
  tat: number | undefined
  pending: number
  readonly limit: RateLimit
}

/** How often a limiter that shares nothing forgets its full buckets. */
const localCleanEveryMillis = 10_000

/** Longest license key kept in a bucket's name: longer text is no key, and must not grow the buckets' memory. */
const maxKeyLength = 64

/** A refusal by the limit `limit` (`lm_rate_limited_total{limit}`), waiting `seconds`. */
const refusedBy = (limit: string, seconds: number): Effect.Effect<never, RateLimited> =>
  Effect.andThen(Metrics.increment(Metrics.rateLimited({ limit })), Effect.fail(rateLimited(seconds)))

const isActivityKind = (endpoint: string): endpoint is ActivityKind =>
  (activityKinds as ReadonlyArray<string>).includes(endpoint)

export class RateLimiter extends Context.Service<RateLimiter, {
  readonly settings: RateLimitSettings
  /** Lets a public request through, or refuses it (429) and records the refusal in the event log. */
  readonly admitPublic: (request: PublicRequest) => Effect.Effect<void, RateLimited>
  /**
   * `admitPublic` at once, for a synchronous caller: true when the request is let through (its tokens taken);
   * false, having taken nothing, when it would be refused: the caller then runs `admitPublic`, which refuses it
   * and records the refusal.
   */
  readonly admitPublicNow: (request: PublicRequest) => boolean
  /** Lets a management request of this API key (its id) through, or refuses it (429). */
  readonly admitApiKey: (apiKeyId: string) => Effect.Effect<void, RateLimited>
  /**
   * Lets a management request with credentials from this client IP have them checked, or refuses it (429) while
   * the IP's failed logins are over `authFailures`. Takes nothing: only a failure does ({@link loginFailed}).
   */
  readonly admitLogin: (ip: string | undefined) => Effect.Effect<void, RateLimited>
  /** Counts a failed login from this client IP: credentials that match no key. */
  readonly loginFailed: (ip: string | undefined) => Effect.Effect<void>
  /** Reconciles with the shared buckets now (what the background fiber does each round). */
  readonly sync: Effect.Effect<void>
}>()("@lm/domain/RateLimiter") {
  static readonly layer = (
    settings: RateLimitSettings = defaultRateLimitSettings,
    options: RateLimiterOptions = {}
  ): Layer.Layer<RateLimiter, never, ActivityRecorder> =>
    Layer.effect(
      RateLimiter,
      Effect.gen(function*() {
        const recorder = yield* ActivityRecorder
        const shared = (yield* SharedRateLimits).advance
        const buckets = new Map<string, Local>()
        // Read directly on the request path (one call, no effect per request); TestClock in tests.
        const clock = yield* Clock.Clock

        /** Takes a token from `local`'s bucket (created under `name` when new). */
        const takeOne = (name: string, local: Local | undefined, limit: RateLimit, now: number) => {
          if (local === undefined) buckets.set(name, { tat: advance(undefined, now, tokenMillis(limit)), pending: 1, limit })
          else {
            local.tat = advance(local.tat, now, tokenMillis(limit))
            local.pending++
          }
        }

        /** Which bucket refused the last refusal of {@link takeAll}: its first (`name`) or the `other`. */
        let refusedOther = false

        /**
         * Takes a token from bucket `name`, and from `other` when given, or from neither (the longer wait wins);
         * undefined when allowed, else the wait in seconds (and {@link refusedOther} says which refused). On the
         * path of every request: one map lookup per bucket and no allocation but a new bucket's.
         */
        const takeAll = (name: string, limit: RateLimit, other: string | undefined, otherLimit: RateLimit, now: number) => {
          const local = buckets.get(name)
          const otherLocal = other === undefined ? undefined : buckets.get(other)
          const wait = waitMillis(local?.tat, limit, now)
          const otherWait = other === undefined ? 0 : waitMillis(otherLocal?.tat, otherLimit, now)
          if (!holdsToken(wait) || !holdsToken(otherWait)) {
            refusedOther = holdsToken(wait)
            return retryAfterSeconds(Math.max(wait, otherWait))
          }
          takeOne(name, local, limit, now)
          if (other !== undefined) takeOne(other, otherLocal, otherLimit, now)
          return undefined
        }

        /** Takes the request's tokens, or gives the wait its refusal states (nothing taken then). */
        const takePublic = (request: PublicRequest, now: number) => {
          const ip = request.ip ?? "unix"
          const key = (request.licenseKey === undefined ? undefined : normaliseLicenseKey(request.licenseKey).slice(0, maxKeyLength))
          const wait = takeAll(
            bucketName("ip", ip),
            settings.perIp,
            key === undefined || key === "" ? undefined : bucketName("key", ip, key),
            settings.perKey,
            now
          )
          return { wait, key }
        }

        const admitPublicNow = (request: PublicRequest): boolean =>
          takePublic(request, clock.currentTimeMillisUnsafe()).wait === undefined

        const admitPublic = (request: PublicRequest): Effect.Effect<void, RateLimited> =>
          Effect.suspend(() => {
            const now = clock.currentTimeMillisUnsafe()
            const { key, wait } = takePublic(request, now)
            if (wait === undefined) return Effect.void
            const refusal = refusedBy(refusedOther ? "key" : "ip", wait)
            if (!isActivityKind(request.endpoint)) return refusal
            return Effect.andThen(
              recorder.record({
                kind: request.endpoint,
                licenseId: null,
                licenseKey: key ?? "",
                machineId: null,
                fingerprint: null,
                ipAddress: request.ip ?? null,
                appVersion: null,
                result: "rest_rate_limited",
                at: now
              }),
              refusal
            )
          })

        const admitApiKey = (apiKeyId: string): Effect.Effect<void, RateLimited> =>
          Effect.suspend(() => {
            const now = clock.currentTimeMillisUnsafe()
            const wait = takeAll(bucketName("api_key", apiKeyId), settings.perApiKey, undefined, settings.perApiKey, now)
            return wait === undefined ? Effect.void : refusedBy("api_key", wait)
          })

        /** The failed-login bucket of a client IP. */
        const loginBucket = (ip: string | undefined) => bucketName("auth_failure", ip ?? "unix")

        const admitLogin = (ip: string | undefined): Effect.Effect<void, RateLimited> =>
          Effect.suspend(() => {
            const wait = waitMillis(buckets.get(loginBucket(ip))?.tat, settings.authFailures, clock.currentTimeMillisUnsafe())
            return holdsToken(wait) ? Effect.void : refusedBy("auth_failures", retryAfterSeconds(wait))
          })

        // Taken even past the limit (logins checked at once may all fail): the debt is a longer wait.
        const loginFailed = (ip: string | undefined): Effect.Effect<void> =>
          Effect.sync(() => {
            const name = loginBucket(ip)
            takeOne(name, buckets.get(name), settings.authFailures, clock.currentTimeMillisUnsafe())
          })

        /** Forgets buckets that are full again and owe nothing to the shared store. */
        const forgetFull = (now: number) => {
          for (const [name, local] of buckets) {
            if (local.pending === 0 && (local.tat === undefined || local.tat <= now)) buckets.delete(name)
          }
        }

        // One round at a time: a round asked for while another is on its way (the last one at shutdown, or a
        // caller's) waits for it, so that it neither forgets buckets the first is about to update nor sends twice.
        const oneRound = yield* Semaphore.make(1)
        const sync: Effect.Effect<void> = shared === undefined
          ? Effect.map(Clock.currentTimeMillis, forgetFull)
          : oneRound.withPermits(1)(Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            forgetFull(now)
            if (buckets.size === 0) return
            // Every bucket this process holds: the ones with takes send them, the others learn what other
            // processes took (cost 0).
            const names = [...buckets.keys()]
            const sent = names.map((name) => buckets.get(name)!.pending)
            for (const name of names) buckets.get(name)!.pending = 0
            const batch = names.map((name, i) => ({ key: name, cost: sent[i]! * tokenMillis(buckets.get(name)!.limit) }))
            const result = yield* Effect.result(shared(batch, now))
            const after = yield* Clock.currentTimeMillis
            names.forEach((name, i) => {
              // Only a round deletes buckets, so every one sent is still here.
              const local = buckets.get(name)!
              if (result._tag === "Failure") {
                // Not sent: kept for the next round.
                local.pending += sent[i]!
                return
              }
              // The shared view, plus what was taken here while the batch was on its way.
              local.tat = Math.max(result.success[i]!, after) + local.pending * tokenMillis(local.limit)
            })
          }))

        if (settings.enabled) {
          // Rounds; without a shared store they only forget full buckets (so many client IPs do not pile up).
          const every = shared === undefined ? localCleanEveryMillis : options.syncEveryMillis ?? 200
          yield* Effect.forkScoped(Effect.repeat(sync, Schedule.spaced(every)))
          // What was taken since the last round is sent before the layer closes.
          if (shared !== undefined) yield* Effect.addFinalizer(() => sync)
        }

        if (!settings.enabled) {
          return RateLimiter.of({
            settings,
            admitPublic: () => Effect.void,
            admitPublicNow: () => true,
            admitApiKey: () => Effect.void,
            admitLogin: () => Effect.void,
            loginFailed: () => Effect.void,
            sync: Effect.void
          })
        }
        return RateLimiter.of({ settings, admitPublic, admitPublicNow, admitApiKey, admitLogin, loginFailed, sync })
      })
    )
}
