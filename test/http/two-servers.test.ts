/**
 * Issue 6: validate answers from memory, yet never from a stale memory. Two `lm serve` processes share one
 * PostgreSQL database; every revoke, suspend, reinstate, terminate, seat change and limit change made through
 * one server is seen by the very next POST /validate on that server, and by the other server within 1 s
 * (LISTEN/NOTIFY), both caches having been warmed first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { admin, type PgServers, post, type Server, startPgServers } from "./support/PgServers.js"
import { serviceUrl } from "../support/services.js"

const url = serviceUrl("DATABASE_URL")

// Needs a real PostgreSQL server (two processes cannot share PGlite), so it runs only when DATABASE_URL is set
// (CI sets it).
describe.skipIf(url === "")("two servers on one PostgreSQL (DATABASE_URL)", () => {
  let started: PgServers | undefined
  let servers: ReadonlyArray<Server> = []

  beforeAll(async () => {
    started = await startPgServers(url, "lm_two_servers", ["A", "B"])
    servers = started.servers
  }, 120_000)

  afterAll(async () => {
    await started?.close()
  }, 60_000)

  it("a change made through one server is seen by its next validate and by the other server within 1 s", async () => {
    const [a, b] = servers as [Server, Server]
    const created = await post(a, "/licenses", { max_activations: 1 }, true)
    expect(created.status).toBe(201)
    const key = created.body.data.license_key as string

    const validate = (server: Server, fingerprint?: string) =>
      post(server, "/validate", { license_key: key, ...(fingerprint === undefined ? {} : { fingerprint }) }).then((r) => {
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        return r.body.data as { code: string; needs_activation: boolean; license: { max_activations: number; activation_count: number } }
      })

    /** Polls `server` until `seen` holds; the milliseconds it took, or fails after 1 s (the bound under test). */
    const seenWithin = async (server: Server, what: string, seen: () => Promise<boolean>) => {
      const start = Date.now()
      await eventually(async () => expect(await seen(), `${what}: seen by server ${server.name}`).toBe(true), { timeout: 1000 })
      return Date.now() - start
    }

    /** Makes a change through `by`; its own next validate must see it at once, the other server within 1 s. */
    const change = async (by: Server, other: Server, what: string, act: () => Promise<void>, seen: (s: Server) => Promise<boolean>) => {
      // Both caches hold the license (and the fingerprints asked about) before the change.
      await seen(by)
      await seen(other)
      await act()
      expect(await seen(by), `${what}: the next validate on server ${by.name}`).toBe(true)
      return seenWithin(other, what, () => seen(other))
    }
    const codeIs = (code: string, fingerprint?: string) => async (s: Server) => (await validate(s, fingerprint)).code === code
    const action = (server: Server, name: string, body: unknown = {}) => async () => {
      const r = await post(server, `/licenses/${key}/${name}`, body, true)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
    }

    expect((await validate(a)).code).toBe("valid")
    expect((await validate(b)).code).toBe("valid")
    const delays: Record<string, number> = {}

    delays.suspend = await change(a, b, "suspend", action(a, "suspend"), codeIs("license_suspended"))
    delays.reinstate = await change(b, a, "reinstate", action(b, "reinstate"), codeIs("valid"))
    delays.revoke = await change(a, b, "revoke", action(a, "revoke"), codeIs("license_revoked"))
    delays.reinstate2 = await change(b, a, "reinstate after revoke", action(b, "reinstate"), codeIs("valid"))

    // A seat taken through B: B's next validate and A (which had cached "not activated") see it.
    delays.activate = await change(b, a, "activation", async () => {
      const r = await post(b, "/activate", { license_key: key, fingerprint: "fp-1" })
      expect(r.status).toBe(201)
    }, async (s) => {
      const [one, two] = await Promise.all([validate(s, "fp-1"), validate(s, "fp-2")])
      // fp-2 no longer needs activation only as long as a seat is free: with the one seat taken, it cannot.
      return one.code === "valid" && two.code === "fingerprint_not_activated" && !two.needs_activation
    })
    // The seat freed through A.
    delays.deactivate = await change(a, b, "deactivation", async () => {
      const r = await post(a, "/deactivate", { license_key: key, fingerprint: "fp-1" })
      expect(r.status).toBe(200)
    }, async (s) => {
      const [one, two] = await Promise.all([validate(s, "fp-1"), validate(s, "fp-2")])
      return one.code === "fingerprint_not_activated" && two.needs_activation
    })
    // The seat limit changed through B.
    delays.limit = await change(b, a, "seat limit", async () => {
      const r = await fetch(`${b.base}/licenses/${key}`, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: admin },
        body: JSON.stringify({ max_activations: 3 })
      })
      expect(r.status).toBe(200)
    }, async (s) => (await validate(s)).license.max_activations === 3)
    delays.terminate = await change(a, b, "terminate", action(a, "terminate", { confirm: true }), codeIs("license_terminated"))

    for (const [what, ms] of Object.entries(delays)) expect(ms, what).toBeLessThanOrEqual(1000)
  }, 60_000)
})
