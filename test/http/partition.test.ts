/**
 * Issue 19, partitions: a server whose link to PostgreSQL is black-holed must not go on answering `valid: true`
 * from its cache for a license another server revoked. Server A (the bundled server, in process) reaches the
 * database through a TCP proxy that the test freezes (nothing delivered, nothing closed: a black hole, not a
 * reset); server B (an engine with its own pool and cache) revokes the license over a direct link. Within the
 * feed's bound (`LM_FEED_STALE_MS`, 2 s) A stops serving from its cache: its validations go to the frozen store
 * and answer 503 `service_unavailable` with `Retry-After`, within the store call's bound; after the thaw they
 * answer `license_revoked`, and A's cache serves again once its heartbeats come back (a log line each way).
 * No answer to a validation sent after the bound is ever `valid: true`. With only A's LISTEN connection frozen (the
 * store answers on the others), A's validations read the store within the bound and answer `license_revoked`, and
 * A's feed listens again on another connection, after which its cache serves again.
 */
import { Effect, Logger, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Engine, Licenses } from "@lm/domain"
import { layerPostgres, layerPostgresStore } from "@lm/storage-pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminAuth } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { type ProxiedServer, startProxiedServer } from "./support/ProxiedServer.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

/** The default bound on the feed's silence (README: LM_FEED_STALE_MS). */
const FEED_STALE_MS = 2_000
/**
 * After the freeze, A's cache may still serve for the bound, measured from its last heartbeat that came back (sent
 * up to one heartbeat, 500 ms, before the freeze), plus slack for a loaded machine: a validation sent later than
 * this must not be served from the cache.
 */
const CACHE_SERVES_AT_MOST_MS = FEED_STALE_MS + 1_000
/** Server A's store call timeout: shorter than the 15 s default (a store setting), so that the freeze waits less. */
const STORE_CALL_TIMEOUT_MS = 5_000
/**
 * How long a validation sent to the frozen store may take to answer 503: the store call timeout plus up to
 * 5 s that @effect/sql-pg takes to give up the query (README, store outages), plus 5 s of slack for a loaded machine.
 */
const FROZEN_ANSWER_WITHIN_MS = STORE_CALL_TIMEOUT_MS + 10_000

/** Processes sharing one store share its master key (the signing seed is sealed with it). */
const masterKey = Redacted.make(new Uint8Array(32).fill(19))

interface Answer {
  /** Milliseconds after the freeze that the request was sent. */
  readonly sentAt: number
  readonly ms: number
  readonly status: number
  readonly retryAfter: string | null
  readonly body: any
}

describe.skipIf(url === "")("a server whose link to PostgreSQL is black-holed (DATABASE_URL)", () => {
  let a: ProxiedServer
  let b: ManagedRuntime.ManagedRuntime<Licenses, unknown>
  /** Server A's log, and when each line came. */
  const lines: Array<string> = []
  const lineTimes: Array<number> = []
  const logger = Logger.layer([Logger.make((entry) => {
    lines.push(Array.isArray(entry.message) ? entry.message.map(String).join(" ") : String(entry.message))
    lineTimes.push(performance.now())
  })])
  /** The last line about the change feed, and how long ago it came. */
  const lastFeedLine = () => {
    const index = lines.findLastIndex((line) => line.includes("change feed"))
    return index < 0 ? undefined : { line: lines[index]!, ago: performance.now() - lineTimes[index]! }
  }

  beforeAll(async () => {
    a = await startProxiedServer(url!, `lm_partition_${process.pid}_${Date.now()}`, logger, { masterKey }, {
      storeCallTimeout: STORE_CALL_TIMEOUT_MS
    })
    b = ManagedRuntime.make(
      Engine.layer(layerPostgresStore({ url: a.directUrl }), { masterKey, sweepIntervalSeconds: 0, eventRetentionDays: 0 })
    )
  }, 120_000)

  afterAll(async () => {
    a?.proxy.thaw()
    await b?.dispose()
    await a?.close()
  }, 120_000)

  const validateOnA = async (key: string, since: number): Promise<Answer> => {
    const sentAt = performance.now()
    const response = await fetch(`${a.server.apiBase}/validate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ license_key: key }),
      signal: AbortSignal.timeout(2 * FROZEN_ANSWER_WITHIN_MS)
    })
    const body = await response.json()
    return {
      sentAt: sentAt - since,
      ms: performance.now() - sentAt,
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      body
    }
  }

  /** A new license, validated on A (in its cache), with A's feed shown alive: B's changes reach A. */
  const warmLicense = async (): Promise<string> => {
    const created = await fetch(`${a.server.apiBase}/licenses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: adminAuth },
      body: "{}"
    })
    expect(created.status).toBe(201)
    const { data } = (await created.json()) as { data: { license_key: string } }
    const key = data.license_key
    const warm = await validateOnA(key, 0)
    expect(warm.body.data).toMatchObject({ valid: true, code: "valid" })
    await b.runPromise(Licenses.use((l) => l.suspend(key)))
    await eventually(async () => expect((await validateOnA(key, 0)).body.data.code).toBe("license_suspended"), { timeout: 2_000 })
    await b.runPromise(Licenses.use((l) => l.reinstate(key)))
    await eventually(async () => expect((await validateOnA(key, 0)).body.data.code).toBe("valid"), { timeout: 2_000 })
    // After an earlier freeze the feed may take a few seconds to settle (connections given up, reconnects, listening
    // again): wait until it has been heard for a second without falling silent (a fresh server has no such line).
    await eventually(async () => {
      expect((await validateOnA(key, 0)).body.data.code).toBe("valid")
      const last = lastFeedLine()
      if (last !== undefined) {
        expect(last.line).toContain("heard again")
        expect(last.ago).toBeGreaterThan(1_000)
      }
    }, { timeout: 30_000, interval: 200 })
    return key
  }

  /** Validations on A every 200 ms until `untilMs` after `since`, each answered in its own time. */
  const validationsOnA = async (key: string, since: number, untilMs: number): Promise<Array<Answer>> => {
    const pending: Array<Promise<Answer>> = []
    while (performance.now() - since < untilMs) {
      pending.push(validateOnA(key, since))
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    return Promise.all(pending)
  }

  const describeAnswer = (x: Answer) => `sent ${Math.round(x.sentAt)} ms after the freeze: ${x.status} ${JSON.stringify(x.body)}`

  it("stops serving a revoked license from its cache within the bound: 503 while frozen, license_revoked after", async () => {
    const key = await warmLicense()

    a.proxy.freeze()
    const frozenAt = performance.now()
    await b.runPromise(Licenses.use((l) => l.revoke(key)))

    const answers = await validationsOnA(key, frozenAt, CACHE_SERVES_AT_MOST_MS + 2_000)
    const describe = describeAnswer
    const late = answers.filter((x) => x.sentAt > CACHE_SERVES_AT_MOST_MS)
    expect(late.length).toBeGreaterThan(5)
    for (const answer of late) {
      expect(answer.status, describe(answer)).toBe(503)
      expect(answer.body, describe(answer)).toMatchObject({ success: false, code: "service_unavailable", data: { status: 503 } })
      expect(answer.retryAfter, describe(answer)).toMatch(/^\d+$/)
      expect(answer.ms, `${describe(answer)}, after ${Math.round(answer.ms)} ms`).toBeLessThan(FROZEN_ANSWER_WITHIN_MS)
    }
    // Before the bound the cache may still serve (that is the bound); nothing else than 200 or 503 is answered.
    for (const answer of answers) expect([200, 503], describe(answer)).toContain(answer.status)

    // The link delivers again: what was held arrives (B's revocation with it), and A answers license_revoked.
    a.proxy.thaw()
    const seen: Array<string> = []
    await eventually(async () => {
      const answer = await validateOnA(key, frozenAt)
      seen.push(answer.status === 200 ? answer.body.data.code : String(answer.status))
      expect(answer.status).toBe(200)
      expect(answer.body.data).toMatchObject({ valid: false, code: "license_revoked", signed_payload: null })
    }, { timeout: 30_000, interval: 200 })
    expect(seen.filter((s) => s !== "503" && s !== "license_revoked"), `answers after the thaw: ${seen}`).toEqual([])

    // The feed's heartbeats come back through the thawed link: A serves from its cache again, and says so once.
    await eventually(async () => {
      expect((await validateOnA(key, frozenAt)).body.data.code).toBe("license_revoked")
      expect(lines.filter((line) => line.includes("change feed is heard again")).length).toBeGreaterThanOrEqual(1)
    }, { timeout: 30_000, interval: 200 })
    // One warning for the silence, not one per validation (a loaded machine may add a late heartbeat's own).
    const silent = lines.filter((line) => line.includes("change feed has been silent"))
    expect(silent.length, silent.join("\n")).toBeGreaterThanOrEqual(1)
    expect(silent.length, silent.join("\n")).toBeLessThanOrEqual(2)
  }, 120_000)

  it("with only its LISTEN connection frozen, reads a revocation from the store within the bound (the store answers)", async () => {
    const key = await warmLicense()
    // The connection of A's feed, as PostgreSQL sees it (B listens too, on its own direct link).
    const listening = await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient
        return yield* sql<{ clientPort: number }>`
          SELECT client_port AS "clientPort" FROM pg_stat_activity
          WHERE datname = current_database() AND query LIKE 'LISTEN%'`
      }).pipe(Effect.provide(layerPostgres({ url: a.directUrl, maxConnections: 1 })), Effect.scoped)
    )
    const frozen = listening.filter(({ clientPort }) => a.proxy.freezeConnection(clientPort))
    expect(frozen, JSON.stringify(listening)).toHaveLength(1)
    const frozenAt = performance.now()
    const warnings = lines.filter((line) => line.includes("change feed has been silent")).length
    await b.runPromise(Licenses.use((l) => l.revoke(key)))

    const answers = await validationsOnA(key, frozenAt, CACHE_SERVES_AT_MOST_MS + 1_000)
    for (const answer of answers) {
      expect(answer.status, describeAnswer(answer)).toBe(200)
      if (answer.sentAt > CACHE_SERVES_AT_MOST_MS) {
        expect(answer.body.data, describeAnswer(answer)).toMatchObject({ valid: false, code: "license_revoked" })
      }
    }
    expect(answers.filter((x) => x.sentAt > CACHE_SERVES_AT_MOST_MS).length).toBeGreaterThan(2)
    expect(lines.filter((line) => line.includes("change feed has been silent")).length).toBeGreaterThan(warnings)

    // Its heartbeats are taken by the store and do not come back: the feed listens again on another connection
    // (storage-pg's relistenAfterMillis, 5 s), and A's cache serves again while the old connection is still frozen.
    const heard = lines.filter((line) => line.includes("change feed is heard again")).length
    await eventually(async () => {
      expect((await validateOnA(key, frozenAt)).body.data.code).toBe("license_revoked")
      expect(lines.filter((line) => line.includes("change feed is heard again")).length).toBeGreaterThan(heard)
    }, { timeout: 20_000, interval: 200 })
    a.proxy.thaw()
  }, 120_000)
})
