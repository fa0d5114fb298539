/**
 * `lm licenses …`, `lm machines …` and `lm audit-log` against a real `lm serve` (CONTRACT §3, §6, §18): every
 * command's JSON answer and table, a refusal as one stderr line with the contract's code and exit code 1, and the
 * audit entries the commands' writes leave.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminKey, type LmServer, startLmServer } from "./support/Lm.js"

// Every step starts a Node process (about a second, several on a loaded two-core machine).
describe("lm licenses, machines and audit-log against a running server", { timeout: 300_000 }, () => {
  let server: LmServer
  let key = ""
  beforeAll(async () => {
    server = await startLmServer()
  }, 120_000)
  afterAll(() => server?.stop())

  it("licenses create, show, list (JSON and table) and update", async () => {
    const created = await server.json(["licenses", "create", "--max-activations", "2", "--product-id", "7", "--expires-at", "2031-01-01T00:00:00+02:00"])
    expect(created).toMatchObject({ status: "inactive", max_activations: 2, product_id: 7, expires_at: "2030-12-31T22:00:00.000Z" })
    key = created.license_key
    const shown = await server.json(["licenses", "show", key.toLowerCase()])
    expect(shown).toMatchObject({ license_key: key, machines: [] })
    const listed = await server.json(["licenses", "list", "--product-id", "7"])
    expect(listed.licenses.map((l: any) => l.license_key)).toEqual([key])
    expect(listed.meta).toEqual({ total: 1, page: 1, per_page: 20, total_pages: 1 })
    const table = await server.run(["licenses", "list", "--product-id", "7"])
    expect(table.code).toBe(0)
    const lines = table.out.trim().split("\n")
    expect(lines[0]).toMatch(/^ID\s+LICENSE_KEY\s+STATUS\s+PRODUCT_ID\s+ACTIVATION_COUNT\s+MAX_ACTIVATIONS\s+EXPIRES_AT$/)
    expect(lines[1]).toMatch(new RegExp(`^${created.id}\\s+${key}\\s+inactive\\s+7\\s+0\\s+2\\s+2030-12-31T22:00:00.000Z$`))
    expect(lines[2]).toBe("1 of 1 (page 1 of 1)")
    const updated = await server.json(["licenses", "update", key, "--max-activations", "5", "--grace-days", "3"])
    expect(updated).toMatchObject({ max_activations: 5, grace_days: 3, product_id: 7 })
    const shownTable = await server.run(["licenses", "show", key])
    expect(shownTable.out).toMatch(new RegExp(`^license_key: +${key}$`, "m"))
  })

  it("machines list, show, deactivate and revoke", async () => {
    const activate = async (fingerprint: string) => {
      const response = await fetch(`${server.apiBase}/activate`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ license_key: key, fingerprint })
      })
      expect(response.status).toBe(201)
    }
    await activate("fp-cli-1")
    await activate("fp-cli-2")
    const listed = await server.json(["machines", "list", key])
    expect(listed.machines.map((m: any) => [m.fingerprint, m.status])).toEqual([["fp-cli-1", "active"], ["fp-cli-2", "active"]])
    const [first, second] = listed.machines
    expect(await server.json(["machines", "show", String(first.id)])).toMatchObject({ id: first.id, fingerprint: "fp-cli-1" })
    expect(await server.json(["machines", "deactivate", String(first.id)])).toMatchObject({ deactivated: true })
    expect(await server.json(["machines", "revoke", String(second.id)])).toMatchObject({ revoked: true, machine: { id: second.id, status: "revoked" } })
    const table = await server.run(["machines", "list", key, "--status", "revoked"])
    expect(table.out).toMatch(new RegExp(`^${second.id}\\s+fp-cli-2\\s+revoked`, "m"))
  })

  it("licenses renew, suspend, revoke, reinstate, terminate and delete; refusals exit 1 with the contract's code", async () => {
    expect(await server.json(["licenses", "renew", key, "--expires-at", "2032-01-01T00:00:00Z"])).toMatchObject({ expires_at: "2032-01-01T00:00:00.000Z" })
    expect(await server.json(["licenses", "suspend", key])).toMatchObject({ status: "suspended" })
    expect(await server.json(["licenses", "revoke", key])).toMatchObject({ status: "revoked" })
    expect((await server.json(["licenses", "reinstate", key])).status).not.toBe("revoked")
    const again = await server.run(["licenses", "reinstate", key])
    expect(again.code).toBe(1)
    expect(again.out).toBe("")
    expect(again.err.trim().split("\n")).toHaveLength(1)
    expect(again.err).toMatch(/^invalid_transition: /)
    const unconfirmed = await server.run(["licenses", "terminate", key])
    expect([unconfirmed.code, unconfirmed.err.split(":")[0]]).toEqual([1, "confirmation_required"])
    expect(await server.json(["licenses", "terminate", key, "--confirm"])).toMatchObject({ status: "terminated" })
    expect(await server.json(["licenses", "delete", key])).toEqual({ deleted: true, id: expect.any(Number) })
    const gone = await server.run(["licenses", "show", key])
    expect([gone.code, gone.err.trim()]).toEqual([1, "license_not_found: No license has that key."])
  })

  it("audit-log lists the commands' writes, refused ones included, with filters", async () => {
    const mine = await server.json(["audit-log", "--target-type", "license", "--target-id", key, "--per-page", "100"])
    expect(mine.entries.map((e: any) => [e.action, e.status]).reverse()).toEqual([
      ["license.create", 201],
      ["license.update", 200],
      ["license.renew", 200],
      ["license.suspend", 200],
      ["license.revoke", 200],
      ["license.reinstate", 200],
      ["license.reinstate", 409],
      ["license.terminate", 400],
      ["license.terminate", 200],
      ["license.delete", 200]
    ])
    const truncated = `\u2026${adminKey.consumerKey.slice(-7)}`
    expect(mine.entries[0].actor).toEqual({ type: "api_key", api_key_id: expect.any(Number), truncated_key: truncated })
    const machines = await server.json(["audit-log", "--action", "machine.revoke"])
    expect(machines.entries.map((e: any) => [e.target.type, e.status])).toEqual([["machine", 200]])
    const table = await server.run(["audit-log", "--action", "license.delete"])
    expect(table.out).toMatch(new RegExp(`^\\d+\\s+\\S+Z\\s+key \\d+ ${truncated}\\s+127\\.0\\.0\\.1\\s+license\\.delete\\s+license ${key}\\s+200\\s`, "m"))
    expect((await server.json(["audit-log", "--actor", "cli"])).entries).toEqual([])
    const bad = await server.run(["audit-log", "--from", "yesterday"])
    expect(bad.code).toBe(2)
  })
})
