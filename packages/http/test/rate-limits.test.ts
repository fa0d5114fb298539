/**
 * Rate limits on the wire (CONTRACT §2, §11): public routes per client IP and per (IP, license key), whichever
 * path serves them (the fast path and the Effect handlers), management routes per API key; over a limit 429
 * `rest_rate_limited` with `Retry-After` equal to `data.retry_after`; a client writing `X-Forwarded-For` changes
 * nothing unless `LM_TRUST_PROXY`; `/health` is never limited; `LM_RATE_LIMIT=off` limits nothing. The update
 * routes (`updates/check`, `updates/download`) are limited like every public route. Failed management logins are
 * limited per client IP: once they are spent, every request with credentials from that IP is 429, a right key's
 * too; successful logins and requests without credentials take nothing; other IPs are not concerned.
 */
import { Layer, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { RateLimit } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerRedisRateLimits } from "@lm/server"
import { adminAuth, manualClock, startApp, type TestApp } from "./support/App.js"
import { basic } from "./support/Management.js"

const limits = (overrides: Partial<RateLimit.RateLimitSettings>): RateLimit.RateLimitSettings => ({
  ...RateLimit.defaultRateLimitSettings,
  ...overrides
})

const apps: Array<TestApp> = []
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()))
})

/**
 * Starts an app on a clock that stands still unless the test moves it: the waits asserted below are exact however
 * long the machine takes between two requests (a bucket refills with the clock).
 */
const start = async (store: Parameters<typeof startApp>[0], options: NonNullable<Parameters<typeof startApp>[1]>, clock = manualClock()) => {
  const app = await startApp(store, { clock: clock.clock, ...options })
  apps.push(app)
  return app
}

const newLicense = async (app: TestApp): Promise<string> => {
  const created = await app.call("POST", "/licenses", { body: {} })
  expect(created.status).toBe(201)
  return created.body.data.license_key as string
}

const validate = (app: TestApp, key: string, headers: Record<string, string> = {}) =>
  app.call("POST", "/validate", { body: { license_key: key }, auth: null, headers })

/** The 429 as the contract writes it; its wait in seconds. */
const expectLimited = (answer: Awaited<ReturnType<TestApp["call"]>>): number => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429)
  expect(answer.body.code).toBe("rest_rate_limited")
  expect(answer.body.data.status).toBe(429)
  expect(answer.headers.get("retry-after")).toBe(String(answer.body.data.retry_after))
  return answer.body.data.retry_after as number
}

describe.each([true, false])("rate limits (fast path %s)", (fastPath) => {
  it("per (IP, license key) and per IP; a refused request takes nothing; a spoofed X-Forwarded-For changes nothing", async () => {
    const clock = manualClock()
    const app = await start("memory", {
      settings: { fastPath },
      rateLimits: { settings: limits({ perIp: { perMinute: 10 }, perKey: { perMinute: 4 } }) }
    }, clock)
    const a = await newLicense(app)
    const b = await newLicense(app)
    for (let i = 0; i < 4; i++) expect((await validate(app, a)).status).toBe(200)
    // 4 a minute: the next token in 15 s.
    expect(expectLimited(await validate(app, a))).toBe(15)
    // The key is read as the contract reads it (trimmed, upper-cased): the same bucket.
    expectLimited(await validate(app, ` ${a.toLowerCase()} `))
    // Another key from the same IP has its own bucket, within the IP's 10 (the refusals took none).
    for (let i = 0; i < 4; i++) expect((await validate(app, b)).status).toBe(200)
    expectLimited(await validate(app, b))
    expect((await app.call("GET", "/public-key", { auth: null })).status).toBe(200)
    expect((await app.call("GET", "/crl", { auth: null })).status).toBe(200)
    // The IP's 10 are spent: every public route refuses, whatever the key; the IP waits 6 s.
    expect(expectLimited(await app.call("GET", "/public-key", { auth: null }))).toBe(6)
    expectLimited(await app.call("GET", "/crl", { auth: null }))
    expectLimited(await app.call("POST", "/activate", { body: { license_key: await newLicense(app), fingerprint: "fp-1" }, auth: null }))
    // Without LM_TRUST_PROXY the header a client writes is not its address.
    expectLimited(await validate(app, a, { "x-forwarded-for": "203.0.113.7" }))
    // Not limited: /health.
    expect((await app.call("GET", "/health", { auth: null })).status).toBe(200)
    // 6 s later the IP has one token again (its keys' buckets stay spent: 15 s a token).
    clock.advance(5_999)
    expect(expectLimited(await app.call("GET", "/public-key", { auth: null }))).toBe(1)
    clock.advance(1)
    expect((await app.call("GET", "/public-key", { auth: null })).status).toBe(200)
    expectLimited(await app.call("GET", "/crl", { auth: null }))
  })

  it("behind a trusted proxy, each client address of X-Forwarded-For has its own buckets", async () => {
    const app = await start("memory", {
      settings: { fastPath, trustProxyHops: 1 },
      rateLimits: { settings: limits({ perIp: { perMinute: 3 } }) }
    })
    const key = await newLicense(app)
    const from = (ip: string) => validate(app, key, { "x-forwarded-for": ip })
    for (let i = 0; i < 3; i++) expect((await from("203.0.113.7")).status).toBe(200)
    expectLimited(await from("203.0.113.7"))
    // A client's own entries left of the proxy's are not taken either.
    expectLimited(await from("198.51.100.1, 203.0.113.7"))
    expect((await from("203.0.113.8")).status).toBe(200)
  })

  it("management routes are limited per API key", async () => {
    const app = await start("memory", {
      settings: { fastPath },
      rateLimits: { settings: limits({ perApiKey: { perMinute: 3 } }) }
    })
    for (let i = 0; i < 3; i++) expect((await app.call("GET", "/licenses")).status).toBe(200)
    expect(expectLimited(await app.call("GET", "/licenses"))).toBe(20)
    expectLimited(await app.call("POST", "/licenses", { body: {} }))
    // Bad credentials are still 401: the limit comes after authentication.
    expect((await app.call("GET", "/licenses", { auth: "Basic eDp5" })).status).toBe(401)
  })

  it("LM_RATE_LIMIT=off limits nothing", async () => {
    const app = await start("memory", {
      settings: { fastPath },
      rateLimits: {
        settings: limits({
          enabled: false,
          perIp: { perMinute: 1 },
          perKey: { perMinute: 1 },
          perApiKey: { perMinute: 1 },
          authFailures: { perMinute: 1 }
        })
      }
    })
    const key = await newLicense(app)
    for (let i = 0; i < 20; i++) expect((await validate(app, key)).status).toBe(200)
    expect((await app.call("GET", "/licenses")).status).toBe(200)
    for (let i = 0; i < 5; i++) expect((await app.call("GET", "/licenses", { auth: wrongKey })).status).toBe(401)
    expect((await app.call("GET", "/licenses")).status).toBe(200)
  })
})

/** Credentials of the right shape that match no key. */
const wrongKey = basic(`ck_${"0".repeat(40)}`, `cs_${"0".repeat(40)}`)

describe("failed management logins", () => {
  it("are limited per client IP: then a right key from that IP is 429 too; successes and other IPs take nothing", async () => {
    const app = await start("memory", {
      settings: { trustProxyHops: 1 },
      rateLimits: { settings: limits({ authFailures: { perMinute: 3 } }) }
    })
    const from = (ip: string, auth: string | null) => app.call("GET", "/licenses", { auth, headers: { "x-forwarded-for": ip } })
    // Successful logins take nothing.
    for (let i = 0; i < 5; i++) expect((await from("203.0.113.7", adminAuth)).status).toBe(200)
    // Three failures a minute: a wrong secret, credentials of no key's shape, an unknown key.
    expect((await from("203.0.113.7", basic(`ck_${"0".repeat(40)}`, "cs_wrong"))).status).toBe(401)
    expect((await from("203.0.113.7", "Basic eDp5")).status).toBe(401)
    expect((await from("203.0.113.7", wrongKey)).status).toBe(401)
    // Spent: 20 s to the next one, for any credentials from this IP, the right ones included.
    expect(expectLimited(await from("203.0.113.7", wrongKey))).toBe(20)
    expectLimited(await from("203.0.113.7", adminAuth))
    expectLimited(await app.call("POST", "/licenses", { body: {}, headers: { "x-forwarded-for": "203.0.113.7" } }))
    // A request without credentials is no login: 401 as ever.
    expect((await from("203.0.113.7", null)).status).toBe(401)
    // Another IP has its own count.
    expect((await from("203.0.113.8", adminAuth)).status).toBe(200)
    expect((await from("203.0.113.8", wrongKey)).status).toBe(401)
  })
})

describe("the update routes pass the public guards", () => {
  it("a burst over the limits on updates/check (per IP and key, then per IP) and updates/download (per IP) gets 429 with Retry-After", async () => {
    const app = await start("memory", { rateLimits: { settings: limits({ perIp: { perMinute: 6 }, perKey: { perMinute: 3 } }) } })
    // Management calls are limited per API key, not per IP: they take nothing from the public buckets.
    expect((await app.call("POST", "/releases", { body: { product_id: 5, version: "1.1.0", artifact_url: "https://cdn.example.com/a.zip" } })).status).toBe(201)
    const created = await app.call("POST", "/licenses", { body: { product_id: 5 } })
    const key = created.body.data.license_key as string
    const check = (licenseKey: string) => app.call("GET", `/updates/check?license_key=${licenseKey}&version=1.0.0`, { auth: null })
    const first = await check(key)
    expect(first.status).toBe(200)
    for (let i = 0; i < 2; i++) expect((await check(key)).status).toBe(200)
    // The key's 3 are spent: 20 s to the next one.
    expect(expectLimited(await check(key))).toBe(20)
    const download = async (url: string) => {
      const response = await fetch(url, { redirect: "manual" })
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
    }
    // 3 of the IP's 6 are left: the external artifact's download is a 302 to its URL.
    for (let i = 0; i < 3; i++) expect((await download(first.body.data.download_url)).status).toBe(302)
    expect(expectLimited(await download(first.body.data.download_url))).toBe(10)
    expectLimited(await download(`${app.apiBase}/updates/download?token=bad`))
    expectLimited(await check(await newLicense(app)))
  })
})

describe("limits shared through a Redis that cannot be reached", () => {
  it("the server still answers at once and limits per process", async () => {
    // Nothing listens on port 1: every round fails, and requests never wait for Redis.
    const app = await start("memory", {
      storeLayer: Layer.merge(MemoryStore.layer, layerRedisRateLimits(Redacted.make("redis://127.0.0.1:1"))),
      rateLimits: { settings: limits({ perKey: { perMinute: 3 } }), syncEveryMillis: 50 }
    })
    const key = await newLicense(app)
    for (let i = 0; i < 3; i++) expect((await validate(app, key)).status).toBe(200)
    expect(expectLimited(await validate(app, key))).toBe(20)
  })
})
