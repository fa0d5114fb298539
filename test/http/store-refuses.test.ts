/**
 * A PostgreSQL that refuses connections while it cannot serve (SQLSTATE 53300 "too many connections", 57P03 "the
 * database system is starting up") is a store outage: requests answer 503 `service_unavailable` with `Retry-After`,
 * and the log holds one line about it (and one when it ends), never an error with a stack per request.
 *
 * With `DATABASE_URL`: the bundled server runs in-process on a fresh database reached through a TCP proxy; the test
 * switches the proxy to a fake server that answers every startup with an `ErrorResponse` carrying the SQLSTATE
 * (the pool's connections are cut, so the next request opens a new one and meets the refusal), then back.
 */
import { Duration, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminAuth } from "../../packages/http/test/support/App.js"
import type { RunningServer } from "../../packages/http/test/support/TestServer.js"
import { OUTAGE_LOG_INTERVAL } from "../../packages/storage-pg/src/repositories/failures.js"
import { type RefusingServer, startRefusingServer } from "../../packages/storage-pg/test/refusingServer.js"
import { eventually } from "../support/eventually.js"
import { type ProxiedServer, startProxiedServer } from "./support/ProxiedServer.js"
import type { Target, TcpProxy } from "./support/TcpProxy.js"
import { serviceUrl } from "../support/services.js"

interface Line {
  readonly level: string
  readonly message: string
  readonly cause: string
}

const url = serviceUrl("DATABASE_URL")

describe.skipIf(url === "")("with PostgreSQL refusing connections (through a proxy)", () => {
  const lines: Array<Line> = []
  const logger = Logger.layer([Logger.make((entry) => {
    lines.push({
      level: entry.logLevel,
      message: Array.isArray(entry.message) ? entry.message.map(String).join(" ") : String(entry.message),
      cause: String(entry.cause)
    })
  })])

  let postgres: Target
  let proxy: TcpProxy
  let server: RunningServer
  const database = `lm_store_refuses_${process.pid}_${Date.now()}`

  let proxied: ProxiedServer

  beforeAll(async () => {
    proxied = await startProxiedServer(url!, database, logger)
    ;({ postgres, proxy, server } = proxied)
  }, 120_000)

  afterAll(() => proxied?.close(), 120_000)

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.apiBase}${path}`, {
      method,
      headers: { authorization: adminAuth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      signal: AbortSignal.timeout(30_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  }

  let key: string

  it("works through the proxy", async () => {
    const created = await call("POST", "/licenses", { max_activations: 5 })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    key = created.body.data.license_key
  })

  const refusals = [
    ["53300", "sorry, too many clients already"],
    ["57P03", "the database system is starting up"]
  ] as const

  for (const [sqlState, message] of refusals) {
    it(`answers 503 with Retry-After while PostgreSQL refuses with ${sqlState}, logging one line, then recovers`, async () => {
      let fake: RefusingServer | undefined
      try {
        fake = await startRefusingServer(sqlState, message)
        const from = lines.length
        const started = Date.now()
        proxy.retarget({ host: "127.0.0.1", port: fake.port })
        // The pool may first notice its cut connections (a 503 too); then every new connection meets the refusal.
        const answers = [await call("GET", "/licenses")]
        const refused = await eventually(async () => {
          const answer = await call("GET", "/licenses")
          answers.push(answer)
          expect(answer.body?.message).toContain(`(SQLSTATE ${sqlState})`)
          return answer
        }, { timeout: 20_000, interval: 50 })
        // The server's own text (it may name the database or its user) goes to the log, never to a client.
        expect(refused.body.message).not.toContain(message)
        for (let i = 0; i < 10; i++) {
          answers.push(await call("GET", "/licenses"), await call("GET", `/licenses/${key}`), await call("GET", "/health"))
        }
        for (const answer of answers) {
          expect(answer.status, JSON.stringify(answer.body)).toBe(503)
          expect(answer.body).toMatchObject({ success: false, code: "service_unavailable", data: { status: 503 } })
          expect(answer.headers.get("retry-after")).toMatch(/^\d+$/)
          expect(answer.body.data.retry_after).toBe(Number(answer.headers.get("retry-after")))
        }
        expect(fake.refused()).toBeGreaterThan(0)
        // One warning for the outage (again once per interval on a slow run), however many requests it failed.
        const during = lines.slice(from)
        const intervals = Math.floor((Date.now() - started) / Duration.toMillis(OUTAGE_LOG_INTERVAL))
        expect(during.length, during.map((line) => `${line.level}: ${line.message}`).join("\n")).toBeGreaterThanOrEqual(1)
        expect(during.length, during.map((line) => `${line.level}: ${line.message}`).join("\n")).toBeLessThanOrEqual(1 + intervals)
        expect(during.length).toBeLessThan(answers.length)
        for (const line of during) {
          expect(line.level).toBe("Warn")
          expect(line.message).toMatch(/^The store is unavailable: /)
          expect(line.cause, "no stack trace").not.toMatch(/\n\s+at /)
        }

        proxy.retarget(postgres)
        await eventually(async () => expect((await call("GET", "/licenses")).status).toBe(200), { timeout: 30_000, interval: 100 })
        const after = lines.slice(from + during.length)
        expect(after.map((line) => `${line.level}: ${line.message}`)).toHaveLength(1)
        expect(after[0]).toMatchObject({ level: "Info" })
        expect(after[0]!.message).toMatch(/^The store is available again after \d+ s \(\d+ calls failed\)$/)
      } finally {
        proxy.retarget(postgres)
        await fake?.close()
      }
    }, 120_000)
  }
})
