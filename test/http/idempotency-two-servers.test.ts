/**
 * Idempotent management writes across processes (CONTRACT §16): two `lm serve` processes on one PostgreSQL receive
 * the same POST /licenses with the same `Idempotency-Key` at once; exactly one license is created, every other
 * answer is the first one replayed or 409 `idempotency_key_in_use`, and a later repeat on either server replays it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type PgServers, type Server, startPgServers } from "./support/PgServers.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

const send = async (server: Server, body: unknown, key: string) => {
  const response = await fetch(`${server.base}/licenses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: admin, "idempotency-key": key },
    body: JSON.stringify(body)
  })
  return { status: response.status, replayed: response.headers.get("idempotent-replayed"), body: (await response.json()) as any }
}

// Needs a real PostgreSQL server (two processes cannot share PGlite): runs when DATABASE_URL is set (CI sets it).
describe.skipIf(url === "")("Idempotency-Key on two servers on one PostgreSQL (DATABASE_URL)", () => {
  let started: PgServers | undefined
  let servers: ReadonlyArray<Server> = []

  beforeAll(async () => {
    started = await startPgServers(url, "lm_idempotency", ["A", "B"])
    servers = started.servers
  }, 120_000)

  afterAll(async () => {
    await started?.close()
  }, 60_000)

  it("the same key sent to both servers at once creates exactly one license", async () => {
    const [a, b] = servers as [Server, Server]
    for (let round = 0; round < 5; round++) {
      const body = { product_id: 7000 + round, meta: { round } }
      const key = `race-${round}`
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => send(i % 2 === 0 ? a : b, body, key)))
      const firsts = answers.filter((r) => r.status === 201 && r.replayed === null)
      expect(firsts, JSON.stringify(answers.map((r) => [r.status, r.replayed, r.body.code]))).toHaveLength(1)
      for (const other of answers.filter((r) => r !== firsts[0])) {
        if (other.status === 409) expect(other.body.code).toBe("idempotency_key_in_use")
        else expect(other).toEqual({ ...firsts[0], replayed: "true" })
      }
      for (const server of [a, b]) {
        expect(await send(server, body, key)).toEqual({ ...firsts[0], replayed: "true" })
        const listed = await fetch(`${server.base}/licenses?product_id=${body.product_id}`, { headers: { authorization: admin } })
        expect(((await listed.json()) as any).meta.total).toBe(1)
      }
    }
  }, 60_000)
})
