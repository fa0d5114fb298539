/**
 * Rate limits (CONTRACT §11): token buckets whose burst is the per-minute limit and which refill continuously,
 * per client IP and per (IP, license key), per API key, failed logins per client IP; refusals are written to the event log; limits shared by
 * processes through `SharedRateLimits` over-admit by at most what the design states (`RateLimiter.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Errors, type Model, Ports, RateLimit, RateLimiter } from "@lm/domain"

describe("token bucket", () => {
  const limit = { perMinute: 60 }

  it("admits a burst of the per-minute limit, then refuses with the wait in whole seconds", () => {
    let tat: number | undefined
    for (let i = 0; i < 60; i++) {
      const outcome = RateLimit.take(tat, limit, 1_000_000)
      expect(outcome.allowed).toBe(true)
      tat = outcome.tat
    }
    const refused = RateLimit.take(tat, limit, 1_000_000)
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    // A slower limit waits longer: 6 a minute is one token every 10 s.
    let slow: number | undefined
    for (let i = 0; i < 6; i++) slow = RateLimit.take(slow, { perMinute: 6 }, 0).tat
    expect(RateLimit.take(slow, { perMinute: 6 }, 0)).toMatchObject({ allowed: false, retryAfterSeconds: 10 })
    expect(RateLimit.take(slow, { perMinute: 6 }, 2_500)).toMatchObject({ allowed: false, retryAfterSeconds: 8 })
  })

  it("refills continuously, one token per minute / limit, never beyond the burst", () => {
    let tat: number | undefined
    for (let i = 0; i < 60; i++) tat = RateLimit.take(tat, limit, 0).tat
    expect(RateLimit.take(tat, limit, 999).allowed).toBe(false)
    expect(RateLimit.take(tat, limit, 1000).allowed).toBe(true)
    expect(RateLimit.tokens(tat, limit, 30_000)).toBeCloseTo(30)
    // Idle for ten minutes: a full bucket, not 600 tokens.
    let later = tat
    let admitted = 0
    while (true) {
      const outcome = RateLimit.take(later, limit, 600_000)
      if (!outcome.allowed) break
      later = outcome.tat
      admitted++
    }
    expect(admitted).toBe(60)
  })
})

/** An event log that keeps what it is given. */
const recordingLog = () => {
  const entries: Array<Model.ActivityEntry> = []
  const layer = Layer.succeed(Ports.ActivityLog, {
    record: (batch) => Effect.sync(() => void entries.push(...batch)),
    count: () => Effect.succeed(entries.length),
    prune: () => Effect.succeed(0)
  })
  return { entries, layer }
}

const settings: RateLimit.RateLimitSettings = {
  enabled: true,
  perIp: { perMinute: 5 },
  perKey: { perMinute: 3 },
  perApiKey: { perMinute: 2 },
  authFailures: { perMinute: 2 }
}

const limiterLayer = (s: RateLimit.RateLimitSettings, log: Layer.Layer<Ports.ActivityLog>) =>
  RateLimiter.layer(s).pipe(Layer.provideMerge(ActivityRecorder.layer()), Layer.provide(log))

/** Whether the request was let through; the retry_after of a refusal. */
const attempt = <E>(admit: Effect.Effect<void, E>) =>
  Effect.map(Effect.exit(admit), (exit) => Exit.isSuccess(exit) ? "ok" : (exit.cause.reasons[0] as { error?: Errors.RateLimited }).error?.retry_after)

describe("RateLimiter", () => {
  it.effect("limits per (IP, key) and per IP, refills with the clock, records refusals in the event log", () => {
    const log = recordingLog()
    return Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const validate = (ip: string, key: string) => attempt(limiter.admitPublic({ endpoint: "validate", ip, licenseKey: key }))
      // Key A: 3 a minute from one IP (one token every 20 s).
      expect([yield* validate("10.0.0.1", "AAAA"), yield* validate("10.0.0.1", "aaaa "), yield* validate("10.0.0.1", "AAAA")])
        .toEqual(["ok", "ok", "ok"])
      expect(yield* validate("10.0.0.1", "AAAA")).toBe(20)
      // Another key from the same IP still passes, until the IP's 5 are spent (the refusal above took nothing).
      expect([yield* validate("10.0.0.1", "BBBB"), yield* validate("10.0.0.1", "BBBB")]).toEqual(["ok", "ok"])
      expect(yield* validate("10.0.0.1", "CCCC")).toBe(12)
      // Another IP has buckets of its own, for the same key too.
      expect(yield* validate("10.0.0.2", "AAAA")).toBe("ok")
      // Refill: 12 s gives the IP a token back (one every 12 s), key A still waits for its own.
      yield* TestClock.adjust("12 seconds")
      expect(yield* validate("10.0.0.1", "AAAA")).toBe(8)
      yield* TestClock.adjust("8 seconds")
      expect(yield* validate("10.0.0.1", "AAAA")).toBe("ok")
      // The routes without a key count against the IP only.
      expect(yield* attempt(limiter.admitPublic({ endpoint: "crl", ip: "10.0.0.3", licenseKey: undefined }))).toBe("ok")

      yield* (yield* ActivityRecorder).flush
      expect(log.entries.map((e) => [e.kind, e.licenseKey, e.ipAddress, e.result])).toEqual([
        ["validate", "AAAA", "10.0.0.1", "rest_rate_limited"],
        ["validate", "CCCC", "10.0.0.1", "rest_rate_limited"],
        ["validate", "AAAA", "10.0.0.1", "rest_rate_limited"]
      ])
    }).pipe(Effect.provide(limiterLayer(settings, log.layer)))
  })

  it.effect("limits management requests per API key", () => {
    const log = recordingLog()
    return Effect.gen(function*() {
      const limiter = yield* RateLimiter
      expect([yield* attempt(limiter.admitApiKey("1")), yield* attempt(limiter.admitApiKey("1"))]).toEqual(["ok", "ok"])
      expect(yield* attempt(limiter.admitApiKey("1"))).toBe(30)
      expect(yield* attempt(limiter.admitApiKey("2"))).toBe("ok")
      yield* TestClock.adjust("30 seconds")
      expect(yield* attempt(limiter.admitApiKey("1"))).toBe("ok")
    }).pipe(Effect.provide(limiterLayer(settings, log.layer)))
  })

  it.effect("limits failed logins per client IP: checking takes nothing, each failure takes one, the clock gives them back", () => {
    const log = recordingLog()
    return Effect.gen(function*() {
      const limiter = yield* RateLimiter
      // Logins checked (successful ones) take nothing.
      for (let i = 0; i < 5; i++) expect(yield* attempt(limiter.admitLogin("10.0.0.1"))).toBe("ok")
      // 2 failures a minute (one back every 30 s); then every login from the IP is refused.
      yield* limiter.loginFailed("10.0.0.1")
      expect(yield* attempt(limiter.admitLogin("10.0.0.1"))).toBe("ok")
      yield* limiter.loginFailed("10.0.0.1")
      expect(yield* attempt(limiter.admitLogin("10.0.0.1"))).toBe(30)
      expect(yield* attempt(limiter.admitLogin("10.0.0.2"))).toBe("ok")
      yield* TestClock.adjust("30 seconds")
      expect(yield* attempt(limiter.admitLogin("10.0.0.1"))).toBe("ok")
    }).pipe(Effect.provide(limiterLayer(settings, log.layer)))
  })

  it.effect("LM_RATE_LIMIT=off lets everything through", () => {
    const log = recordingLog()
    return Effect.gen(function*() {
      const limiter = yield* RateLimiter
      for (let i = 0; i < 50; i++) {
        expect(yield* attempt(limiter.admitPublic({ endpoint: "validate", ip: "10.0.0.1", licenseKey: "AAAA" }))).toBe("ok")
        expect(yield* attempt(limiter.admitApiKey("1"))).toBe("ok")
        yield* limiter.loginFailed("10.0.0.1")
        expect(yield* attempt(limiter.admitLogin("10.0.0.1"))).toBe("ok")
      }
    }).pipe(Effect.provide(limiterLayer({ ...settings, enabled: false }, log.layer)))
  })

  it.effect("two limiters sharing buckets: what one admitted is refused by the other after a round, within the stated bound", () => {
    // The shared store: the port's rule, `tat = max(tat, now) + cost`, over one map.
    const tats = new Map<string, number>()
    let rounds = 0
    const shared = Layer.succeed(Ports.SharedRateLimits, {
      advance: (batch, now) =>
        Effect.sync(() => {
          rounds++
          return batch.map(({ cost, key }) => {
            const tat = RateLimit.advance(tats.get(key), now, cost)
            tats.set(key, tat)
            return tat
          })
        })
    })
    const perKey = { ...settings, perIp: { perMinute: 1000 }, perKey: { perMinute: 10 } }
    const one = () => Layer.fresh(limiterLayer(perKey, recordingLog().layer).pipe(Layer.provide(shared)))
    return Effect.gen(function*() {
      const [a, b] = yield* Effect.all([
        Effect.provide(Effect.service(RateLimiter), one()),
        Effect.provide(Effect.service(RateLimiter), one())
      ])
      const validate = (limiter: typeof a) => attempt(limiter.admitPublic({ endpoint: "validate", ip: "10.0.0.1", licenseKey: "AAAA" }))
      // 10 a minute: one token every 6 s. B takes one and sends it.
      expect(yield* validate(b)).toBe("ok")
      yield* b.sync
      // A had never seen the key: its bucket starts full there (the over-admission the design allows).
      for (let i = 0; i < 10; i++) expect(yield* validate(a)).toBe("ok")
      expect(yield* validate(a)).toBe(6)
      yield* a.sync
      // B's view is a round old: it still admits.
      expect(yield* validate(b)).toBe("ok")
      yield* b.sync
      yield* a.sync
      // Now both know every take: 12 admitted for a burst of 10, 2 over, within (N - 1) × (burst + rate × round).
      // The excess is a debt both refuse until it is repaid: 2 tokens more than usual, 18 s for the next one.
      expect(yield* validate(a)).toBe(18)
      expect(yield* validate(b)).toBe(18)
      yield* TestClock.adjust("12 seconds")
      yield* Effect.all([a.sync, b.sync])
      expect([yield* validate(a), yield* validate(b)]).toEqual([6, 6])
      yield* TestClock.adjust("6 seconds")
      expect(yield* validate(a)).toBe("ok")
      expect(rounds).toBeGreaterThan(0)
    })
  })
  it.effect("a round asked for while another is on its way waits for it: the takes are sent once, nothing is lost or crashes", () => {
    // The shared store's first round waits at a gate; a second round (e.g. the one at shutdown) comes meanwhile.
    const gate = Deferred.makeUnsafe<void>()
    const sent: Array<number> = []
    let rounds = 0
    const shared = Layer.succeed(Ports.SharedRateLimits, {
      advance: (batch, now) =>
        Effect.andThen(
          rounds++ === 0 ? Deferred.await(gate) : Effect.void,
          Effect.sync(() => batch.map(({ cost }) => (sent.push(cost), now + cost)))
        )
    })
    const layer = limiterLayer({ ...settings, perIp: { perMinute: 60 } }, recordingLog().layer).pipe(Layer.provide(shared))
    return Effect.gen(function*() {
      const limiter = yield* RateLimiter
      expect(yield* attempt(limiter.admitPublic({ endpoint: "validate", ip: "10.0.0.9", licenseKey: undefined }))).toBe("ok")
      const first = yield* Effect.forkChild(limiter.sync)
      yield* Effect.yieldNow
      // The bucket is full again by now: a round running beside the first would forget it under the first's feet.
      yield* TestClock.adjust("2 seconds")
      const second = yield* Effect.forkChild(limiter.sync)
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      const exits = [yield* Fiber.await(first), yield* Fiber.await(second)]
      expect(exits.every(Exit.isSuccess)).toBe(true)
      // The one take (1 s of a 60-a-minute bucket) was sent once.
      expect(sent).toEqual([1000])
    }).pipe(Effect.provide(layer))
  })
})
