/**
 * Issue 14: a subscription's move is seen at once by its server's validation cache and CRL, and by another server
 * on the same PostgreSQL within 1 s. Two `lm serve` processes share one database; both have validated the bound
 * license (and served the CRL) before each move. Pausing through A suspends the license: A's next validate and
 * CRL show it, B's within 1 s; resuming through B lifts it the other way round; a cancel-now through A ends the
 * license (refused `license_expired`; an ended license is not in the CRL, which lists only revoked and suspended
 * keys).
 */
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { type PgServers, post, request, type Server, startPgServers } from "./support/PgServers.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** The suspended key hashes of a server's CRL (the signed token's payload, its first part). */
const suspendedKeys = async (server: Server): Promise<ReadonlyArray<string>> => {
  const r = await request(server, "GET", "/crl")
  expect(r.status).toBe(200)
  return JSON.parse(Buffer.from((r.body.data.crl as string).split(".")[0]!, "base64url").toString("utf8")).suspended_keys
}

describe.skipIf(url === "")("a subscription's moves across two servers on one PostgreSQL (DATABASE_URL)", () => {
  let started: PgServers | undefined
  let servers: ReadonlyArray<Server> = []

  beforeAll(async () => {
    // the period-end job off: only the moves made here change the license
    started = await startPgServers(url, "lm_subs_two_servers", ["A", "B"], { LM_SUBSCRIPTION_JOB_INTERVAL: "0" })
    servers = started.servers
  }, 120_000)

  afterAll(async () => {
    await started?.close()
  }, 60_000)

  it("pause, resume and cancel through one server reach the other's validate and CRL within 1 s", async () => {
    const [a, b] = servers as [Server, Server]
    const created = await post(a, "/subscriptions", { user_id: 7, billing_period: "month", billing_interval: 1, amount: "30.00", currency: "USD" }, true)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.data.id as number
    const key = created.body.data.license.license_key as string
    const hash = sha256(key)

    const code = async (server: Server) => {
      const r = await post(server, "/validate", { license_key: key })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      return r.body.data.code as string
    }
    const listed = async (server: Server) => (await suspendedKeys(server)).includes(hash)
    /** Polls until `seen` holds on `server`; fails after 1 s (the bound under test). Returns the milliseconds. */
    const within1s = async (server: Server, what: string, seen: () => Promise<boolean>) => {
      const start = Date.now()
      await eventually(async () => expect(await seen(), `${what} on server ${server.name}`).toBe(true), { timeout: 1000 })
      return Date.now() - start
    }
    const move = async (server: Server, action: string, body: unknown = {}) => {
      const r = await post(server, `/subscriptions/${id}/${action}`, body, true)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    }
    const delays: Record<string, number> = {}

    // both caches hold the license, both CRLs are served
    for (const server of [a, b]) {
      expect(await code(server)).toBe("valid")
      expect(await listed(server)).toBe(false)
    }

    await move(a, "pause")
    expect(await code(a), "A's next validate after the pause").toBe("license_suspended")
    expect(await listed(a), "A's next CRL after the pause").toBe(true)
    delays.pauseValidate = await within1s(b, "the pause's validate", async () => (await code(b)) === "license_suspended")
    delays.pauseCrl = await within1s(b, "the pause's CRL", () => listed(b))

    await move(b, "resume")
    expect(await code(b), "B's next validate after the resume").toBe("valid")
    expect(await listed(b), "B's next CRL after the resume").toBe(false)
    delays.resumeValidate = await within1s(a, "the resume's validate", async () => (await code(a)) === "valid")
    delays.resumeCrl = await within1s(a, "the resume's CRL", async () => !(await listed(a)))

    await move(a, "cancel", { at_period_end: false })
    expect(await code(a), "A's next validate after the cancel").toBe("license_expired")
    delays.cancelValidate = await within1s(b, "the cancel's validate", async () => (await code(b)) === "license_expired")

    for (const [what, ms] of Object.entries(delays)) expect(ms, what).toBeLessThanOrEqual(1000)
  }, 60_000)
})
