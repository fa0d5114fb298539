/**
 * Issue 3: an unreachable store is a typed error that the HTTP layer answers as 503 `service_unavailable` with
 * `Retry-After`, within a bounded time, never a 500 or a hang; once the store is back, requests succeed again.
 *
 * With `DATABASE_URL`: the bundled server runs in-process on a fresh database reached through a TCP proxy,
 * which the test cuts (connections destroyed, port closed) and brings back, then freezes (nothing answers,
 * nothing closes) and thaws. Always: `lm serve` pointed at a
 * PostgreSQL that refuses connections, or at one that accepts TCP and never answers, fails at start with a
 * message naming the store, within its connect timeout.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminAuth } from "../../packages/http/test/support/App.js"
import type { RunningServer } from "../../packages/http/test/support/TestServer.js"
import { eventually } from "../support/eventually.js"
import { exitWithin, spawnServer } from "./support/Child.js"
import { type ProxiedServer, startProxiedServer } from "./support/ProxiedServer.js"
import type { TcpProxy } from "./support/TcpProxy.js"
import { serviceUrl } from "../support/services.js"

/**
 * The server's store call timeout: shorter than the 15 s default (a store setting), so that the frozen case waits
 * less; the bounds below follow from it.
 */
const STORE_CALL_TIMEOUT_MS = 5_000
/** How long an answer may take while the store is down: the store call timeout; refused connects fail at once. */
const ANSWER_WITHIN_MS = STORE_CALL_TIMEOUT_MS + 5_000
/**
 * The same for a store that stops answering without closing its connections: the store call timeout, plus
 * up to 5 s that @effect/sql-pg takes to cancel the query before the timeout completes (storage-pg README), plus
 * 5 s of slack for a loaded machine. Measured with the 15 s default: about 20 s.
 */
const FROZEN_ANSWER_WITHIN_MS = STORE_CALL_TIMEOUT_MS + 10_000

/** One answer, how long it took, or that none came (a hang, cut at twice the bound). */
interface Timed {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly ms: number
}

const url = serviceUrl("DATABASE_URL")

describe.skipIf(url === "")("with PostgreSQL behind a proxy that is cut and restored", () => {
  let proxied: ProxiedServer
  let proxy: TcpProxy
  let server: RunningServer

  beforeAll(async () => {
    proxied = await startProxiedServer(url!, `lm_store_down_${process.pid}_${Date.now()}`, undefined, {}, {
      storeCallTimeout: STORE_CALL_TIMEOUT_MS
    })
    ;({ proxy, server } = proxied)
  }, 120_000)

  afterAll(() => proxied?.close(), 120_000)

  /** A request with the admin key (public routes ignore it), timed. */
  const call = async (method: string, path: string, body?: unknown): Promise<Timed> => {
    const started = performance.now()
    const response = await fetch(`${server.apiBase}${path}`, {
      method,
      headers: { authorization: adminAuth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      signal: AbortSignal.timeout(2 * FROZEN_ANSWER_WITHIN_MS),
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text), ms: performance.now() - started }
  }

  /** Checks a 503 `service_unavailable` in the envelope, with `Retry-After`, in time. */
  const expectUnavailable = (answer: Timed, what: string, within = ANSWER_WITHIN_MS) => {
    expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(503)
    expect(answer.body, what).toMatchObject({ success: false, code: "service_unavailable", data: { status: 503 } })
    expect(answer.headers.get("retry-after"), what).toMatch(/^\d+$/)
    expect(answer.headers.get("x-request-id"), what).toMatch(/\S/)
    expect(answer.ms, `${what}: answered after ${Math.round(answer.ms)} ms`).toBeLessThan(within)
  }

  let key: string

  it("works through the proxy", async () => {
    const created = await call("POST", "/licenses", { max_activations: 5 })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    key = created.body.data.license_key
    expect((await call("POST", "/activate", { license_key: key, fingerprint: "before-cut" })).status).toBe(201)
    expect((await call("GET", "/health")).status).toBe(200)
  })

  it("answers 503 service_unavailable with Retry-After, in bounded time, while the store is unreachable", async () => {
    await proxy.cut()
    expectUnavailable(await call("GET", "/licenses"), "GET /licenses")
    expectUnavailable(await call("GET", "/health"), "GET /health")
    expectUnavailable(await call("GET", `/licenses/${key}`), "GET /licenses/{key}")
    expectUnavailable(await call("POST", "/activate", { license_key: key, fingerprint: "during-cut" }), "POST /activate")
    expectUnavailable(await call("POST", "/licenses", {}), "POST /licenses")
    // Validation may be served from the in-memory cache; either way it is never a 500 or a hang.
    const validated = await call("POST", "/validate", { license_key: key, fingerprint: "before-cut" })
    expect([200, 503], JSON.stringify(validated.body)).toContain(validated.status)
    expect(validated.ms).toBeLessThan(ANSWER_WITHIN_MS)
  }, 180_000)

  /** Waits until GET /licenses answers 200 again; on the way only 503s are allowed. Then writes work again. */
  const recovers = async (fingerprint: string) => {
    // The pool notices dead connections on use: a request or two may still answer 503, never anything else.
    const seen: Array<number> = []
    const answer = await eventually(async () => {
      const answer = await call("GET", "/licenses")
      seen.push(answer.status)
      expect(answer.status, `statuses: ${seen}`).toBe(200)
      return answer
    }, { timeout: 30_000, interval: 200 })
    expect(seen.filter((s) => s !== 503 && s !== 200), `statuses: ${seen}`).toEqual([])
    expect(answer.body.data.licenses.map((l: { license_key: string }) => l.license_key)).toContain(key)
    expect((await call("GET", "/health")).status).toBe(200)
    const activated = await call("POST", "/activate", { license_key: key, fingerprint })
    expect(activated.status, JSON.stringify(activated.body)).toBe(201)
    const license = await call("GET", `/licenses/${key}`)
    expect(license.body.data.machines.map((m: { fingerprint: string }) => m.fingerprint)).toContain(fingerprint)
  }

  it("succeeds again once the store is back", async () => {
    await proxy.restore()
    await recovers("after-restore")
  }, 120_000)

  it("answers 503 in bounded time when the store stops answering without closing (a frozen host)", async () => {
    proxy.freeze()
    const [licenses, health] = await Promise.all([call("GET", "/licenses"), call("GET", "/health")])
    expectUnavailable(licenses, "GET /licenses", FROZEN_ANSWER_WITHIN_MS)
    expectUnavailable(health, "GET /health", FROZEN_ANSWER_WITHIN_MS)
  }, 120_000)

  it("succeeds again once the frozen store answers again", async () => {
    proxy.thaw()
    await recovers("after-thaw")
  }, 120_000)
})

describe("lm serve against a PostgreSQL it cannot reach", () => {
  /** Starts `lm serve` on `databaseUrl` and expects it to give up with a message naming the store. */
  const failsAtStart = async (databaseUrl: string) => {
    const server = spawnServer({ DATABASE_URL: databaseUrl, PORT: "0", HOST: "127.0.0.1", LM_SWEEP_INTERVAL: "0" })
    try {
      // The connect timeout is 5 s; the child also needs a few seconds to load the sources.
      const code = await exitWithin(server, 60_000)
      expect(code, server.output()).not.toBe(0)
      expect(server.output()).toMatch(/store is unavailable/i)
      expect(server.output()).not.toMatch(/Listening on/)
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
    }
  }

  it("exits non-zero at once when the port refuses connections", async () => {
    await failsAtStart("postgres://postgres@127.0.0.1:1/postgres")
  }, 90_000)

  it("exits non-zero after the connect timeout when the server accepts TCP and never answers", async () => {
    const sockets = new Set<net.Socket>()
    const silent = net.createServer((socket) => {
      sockets.add(socket)
      socket.on("error", () => {})
    })
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    try {
      const port = (silent.address() as net.AddressInfo).port
      await failsAtStart(`postgres://postgres@127.0.0.1:${port}/postgres`)
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  }, 90_000)
})
