/**
 * Rate limits shared by two `lm serve` processes (CONTRACT §11), through Redis (`LM_REDIS_URL`, both servers on
 * the memory store) and through PostgreSQL (both servers on one database). Each server decides from local buckets
 * and reconciles every `LM_RATE_LIMIT_SYNC_MS` (100 ms here); the bound under test is the one `RateLimiter.ts`
 * states: over a window of t ms, N processes admit at most burst + rate × t + (N - 1) × (burst + rate × round)
 * for one key, and every admitted request is counted in the shared bucket, so the excess is a debt both servers
 * then make the client wait for.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase } from "../storage-contract/pg-support.js"
import { eventually } from "../support/eventually.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { serviceUrl } from "../support/services.js"

const databaseUrl = serviceUrl("DATABASE_URL")
const redisUrl = serviceUrl("REDIS_URL")

/** Per (IP, license key): 60 a minute (a token a second), burst 60. */
const perKey = 60
const roundMillis = 100

interface Server {
  readonly process: ServerProcess
  readonly base: string
}

const validate = async (server: Server, key: string) => {
  const response = await fetch(`${server.base}/validate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ license_key: key })
  })
  const body = (await response.json()) as { code?: string; data: { retry_after?: number } }
  return { limited: response.status === 429, retryAfter: body.data.retry_after }
}

const sharedLimits = (name: string, storeEnv: () => Promise<Record<string, string>>) =>
  describe(`two servers sharing rate limits through ${name}`, () => {
    let scope: Scope.Closeable
    const servers: Array<Server> = []
    // Each run its own keys: Redis keeps buckets between runs.
    const run = String(Date.now() % 10_000).padStart(4, "0")

    beforeAll(async () => {
      scope = Effect.runSync(Scope.make())
      const env = await storeEnv()
      // One after the other: the first migrates a fresh database.
      for (let i = 0; i < 2; i++) {
        const child = spawnServer({
          ...env,
          PORT: "0",
          HOST: "127.0.0.1",
          LM_SWEEP_INTERVAL: "0",
          LM_RATE_LIMIT: "on",
          LM_RATE_LIMIT_PER_KEY: String(perKey),
          LM_RATE_LIMIT_PER_IP: "1000000",
          LM_RATE_LIMIT_SYNC_MS: String(roundMillis)
        })
        const [, base] = await waitForOutput(child, /Listening on (http:\/\/\S+)/)
        servers.push({ process: child, base: base! })
      }
    }, 120_000)

    afterAll(async () => {
      await Promise.all(servers.map(async (server) => {
        server.process.child.kill("SIGTERM")
        await exitWithin(server.process, 30_000).catch(() => server.process.child.kill("SIGKILL"))
      }))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }, 60_000)

    it("a burst sent to both stays within the stated bound, and the excess is a debt both servers enforce", async () => {
      const [a, b] = servers as [Server, Server]
      const key = `BRST-${run}-AAAA-0001`
      const started = Date.now()
      const requests = Array.from({ length: 300 }, (_, i) => i % 2 === 0 ? a : b)
      let admitted = 0
      // 20 at a time, alternating between the servers.
      for (let i = 0; i < requests.length; i += 20) {
        const answers = await Promise.all(requests.slice(i, i + 20).map((server) => validate(server, key)))
        admitted += answers.filter((answer) => !answer.limited).length
      }
      const elapsed = Date.now() - started
      const rate = perKey / 60_000
      const bound = perKey + rate * elapsed + (2 - 1) * (perKey + rate * roundMillis)
      expect(admitted).toBeGreaterThanOrEqual(perKey)
      expect(admitted).toBeLessThanOrEqual(Math.floor(bound))
      // Once both have reconciled, each refuses with the wait of the whole debt: about (admitted - burst) seconds
      // (without sharing it would be a second).
      const debtSeconds = admitted - perKey
      for (const server of [a, b]) {
        await eventually(async () => {
          const answer = await validate(server, key)
          expect(answer.limited).toBe(true)
          expect(answer.retryAfter).toBeGreaterThanOrEqual(debtSeconds - Math.ceil(elapsed / 1000) - 1)
        }, { timeout: 5000 })
      }
    }, 60_000)

    it("what one server admitted, the other refuses within its next rounds", async () => {
      const [a, b] = servers as [Server, Server]
      const key = `SEQU-${run}-AAAA-0002`
      // B knows the key (one request), then A spends the rest of the burst.
      expect((await validate(b, key)).limited).toBe(false)
      for (let i = 0; i < perKey - 1; i++) expect((await validate(a, key)).limited).toBe(false)
      // B learns at its next rounds: it admits what arrives before then (a request every 20 ms here), far fewer
      // than the 59 its own bucket would still hold without sharing.
      let admittedByB = 0
      await eventually(async () => {
        const answer = await validate(b, key)
        if (!answer.limited) admittedByB++
        expect(answer.limited).toBe(true)
      }, { timeout: 5000, interval: 20 })
      expect(admittedByB).toBeLessThan(30)
    }, 60_000)
  })

describe.skipIf(redisUrl === "")("Redis (REDIS_URL)", () => {
  sharedLimits("Redis", async () => ({ LM_STORAGE: "memory", LM_REDIS_URL: redisUrl }))
})

describe.skipIf(databaseUrl === "")("PostgreSQL (DATABASE_URL)", () => {
  let scope: Scope.Closeable | undefined
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  })
  sharedLimits("PostgreSQL", async () => {
    scope = Effect.runSync(Scope.make())
    const url = await Effect.runPromise(Scope.provide(freshDatabase(databaseUrl, `lm_rate_limits_${process.pid}_${Date.now()}`), scope))
    return { DATABASE_URL: url }
  })
})
