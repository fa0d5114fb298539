/**
 * Issue 33: a billing provider event is applied once across processes. Two `lm serve` processes share one
 * PostgreSQL (DATABASE_URL); the provider retries or fans a delivery out, so the same signed event reaches both at
 * the same moment, three times each: exactly one receipt applies it (one paid renewal, the period moved once),
 * every other is answered 200 `duplicate`. For each provider, several rounds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Delivery, kits, type Target } from "../../packages/http/test/support/BillingProviders.js"
import { type PgServers, request, type Server, startPgServers } from "./support/PgServers.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")
const DAY = 86_400_000

const deliver = async (server: Server, provider: string, delivery: Delivery) => {
  const response = await fetch(`${server.base}/billing/${provider}/events`, { method: "POST", headers: delivery.headers, body: delivery.body })
  const body = (await response.json()) as any
  expect(response.status, JSON.stringify(body)).toBe(200)
  return body.data.outcome as string
}

describe.skipIf(url === "")("a billing provider event received by two servers at once on one PostgreSQL (DATABASE_URL)", () => {
  const all = kits()
  let started: PgServers | undefined
  let servers: ReadonlyArray<Server> = []

  beforeAll(async () => {
    started = await startPgServers(url, "lm_billing_two", ["A", "B"], {
      LM_SUBSCRIPTION_JOB_INTERVAL: "0",
      LM_STRIPE_WEBHOOK_SECRET: all[0]!.secret,
      LM_PADDLE_WEBHOOK_SECRET: all[1]!.secret,
      LM_LEMONSQUEEZY_WEBHOOK_SECRET: all[2]!.secret
    })
    servers = started.servers
  }, 120_000)

  afterAll(async () => {
    await started?.close()
  }, 60_000)

  for (const kit of all) {
    it(`${kit.provider}: each event is applied once, every other receipt is a duplicate`, async () => {
      const [a, b] = servers as [Server, Server]
      const externalId = kit.provider === "lemonsqueezy" ? "4242" : "sub_two_servers"
      const created = await request(a, "POST", "/subscriptions", {
        user_id: 5, billing_period: "day", billing_interval: 30, amount: "30.00", currency: "USD", billing_provider: kit.provider, external_id: externalId
      }, true)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const id = created.body.data.id as number
      const target: Target = { externalId, lmId: null, amount: 3000, days: 30, currency: "USD" }
      const now = Math.floor(Date.now() / 1000) * 1000
      const rounds = 4
      for (let round = 0; round < rounds; round++) {
        const start = now - (rounds - round) * 30 * DAY
        const delivery = kit.paid(target, { at: start, start, end: start + 30 * DAY })
        const outcomes = await Promise.all([a, b, a, b, a, b].map((server) => deliver(server, kit.provider, delivery)))
        expect(outcomes.filter((o) => o === "applied"), `round ${round}: ${outcomes.join(", ")}`).toHaveLength(1)
        expect(outcomes.filter((o) => o === "duplicate")).toHaveLength(5)
      }
      const renewals = await request(b, "GET", `/subscriptions/${id}/renewals?per_page=50`, undefined, true)
      expect(renewals.body.data.renewals.map((r: any) => r.type)).toEqual(["signup", ...Array.from({ length: rounds }, () => "renewal")])
      const got = await request(b, "GET", `/subscriptions/${id}`, undefined, true)
      expect(got.body.data.current_period_end).toBe(new Date(now).toISOString())
      const applied = await request(a, "GET", `/billing/events?provider=${kit.provider}&outcome=applied`, undefined, true)
      expect(applied.body.meta.total).toBe(rounds)
      const duplicates = await request(a, "GET", `/billing/events?provider=${kit.provider}&outcome=duplicate`, undefined, true)
      expect(duplicates.body.meta.total).toBe(rounds * 5)
    }, 60_000)
  }
})
