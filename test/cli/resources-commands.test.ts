/**
 * `lm generators …`, `lm policies …`, `lm subscriptions …`, `lm webhooks …`, `lm api-keys …` and `lm releases …` against a real
 * `lm serve` (CONTRACT §8, §9, §10, §11, §15): every command's answer, the webhook's deliveries and redelivery against a receiver on
 * loopback, and `releases publish` uploading a file with its progress bar on stderr.
 */
import { writeFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.js"
import { type Receiver, startReceiver } from "../support/receiver.js"
import { lm, type LmServer, startLmServer } from "./support/Lm.js"

describe("lm generators, policies, subscriptions, webhooks, api-keys and releases against a running server", { timeout: 300_000 }, () => {
  let server: LmServer
  let receiver: Receiver
  const dir = mkdtempSync(join(tmpdir(), "lm-cli-release-"))
  beforeAll(async () => {
    receiver = await startReceiver()
    server = await startLmServer({
      LM_WEBHOOK_ALLOW_INSECURE: "1",
      LM_WEBHOOK_ALLOW_PRIVATE: "1",
      LM_ARTIFACT_DIR: join(dir, "artifacts")
    })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await receiver?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("generators create, list, show, update, generate and delete", async () => {
    const created = await server.json(["generators", "create", "--name", "cli-gen", "--prefix", "CLI", "--max-activations", "3"])
    expect(created).toMatchObject({ name: "cli-gen", prefix: "CLI", default_max_activations: 3 })
    const id = String(created.id)
    expect((await server.json(["generators", "list"])).generators.map((g: any) => g.id)).toContain(created.id)
    expect(await server.json(["generators", "update", id, "--name", "renamed"])).toMatchObject({ name: "renamed" })
    const generated = await server.json(["generators", "generate", id, "--count", "3"])
    expect(generated.licenses).toHaveLength(3)
    expect(generated.licenses.every((l: any) => l.license_key.startsWith("CLI") && l.status === "pending")).toBe(true)
    const table = await server.run(["generators", "generate", id, "--count", "2"])
    expect(table.out.trim().split("\n").at(-1)).toBe("2 keys generated")
    expect(await server.json(["generators", "show", id])).toMatchObject({ name: "renamed", pool_size: 5 })
    expect(await server.json(["generators", "delete", id])).toMatchObject({ deleted: true })
  })

  it("policies create, list, show, update, apply and delete", async () => {
    const created = await server.json(["policies", "create", "--name", "Pro", "--entitlements", "export, sync", "--max-activations", "4"])
    expect(created).toMatchObject({ name: "Pro", entitlements: ["export", "sync"], max_activations: 4 })
    const id = String(created.id)
    expect((await server.json(["policies", "list"])).policies.map((p: any) => p.id)).toContain(created.id)
    expect(await server.json(["policies", "update", id, "--max-activations", "6"])).toMatchObject({ max_activations: 6 })
    expect(await server.json(["policies", "show", id])).toMatchObject({ name: "Pro", max_activations: 6 })
    expect(await server.json(["policies", "apply", id])).toEqual({ updated: 0 })
    expect(await server.json(["policies", "delete", id])).toMatchObject({ deleted: true })
    const gone = await server.run(["policies", "show", id])
    expect([gone.code, gone.err.split(":")[0]]).toEqual([1, "policy_not_found"])
  })

  it("subscriptions create, list, show, pause, resume, renew, renewals, switch and cancel", async () => {
    const created = await server.json(["subscriptions", "create", "--user-id", "77", "--billing-period", "month", "--amount", "19.00", "--currency", "USD"])
    expect(created).toMatchObject({ user_id: 77, status: "active", amount: "19.00", currency: "USD" })
    const id = String(created.id)
    expect((await server.json(["subscriptions", "list", "--user-id", "77"])).subscriptions.map((s: any) => s.id)).toEqual([created.id])
    expect(await server.json(["subscriptions", "pause", id])).toMatchObject({ status: "on-hold" })
    expect(await server.json(["subscriptions", "resume", id])).toMatchObject({ status: "active" })
    await server.json(["subscriptions", "renew", id, "--transaction-id", "txn_cli"])
    expect((await server.json(["subscriptions", "renewals", id])).renewals.map((r: any) => r.transaction_id)).toContain("txn_cli")
    expect(await server.json(["subscriptions", "switch", id, "--amount", "29.00"])).toMatchObject({ amount: "29.00" })
    expect(await server.json(["subscriptions", "cancel", id])).toMatchObject({ status: "cancelled" })
    expect(await server.json(["subscriptions", "show", id])).toMatchObject({ status: "cancelled", license: expect.any(Object) })
  })

  it("webhooks create, list, update, ping, deliveries, redeliver and delete", async () => {
    const created = await server.json(["webhooks", "create", "--url", receiver.url, "--events", "license.created, license.revoked", "--name", "cli"])
    expect(created).toMatchObject({ url: receiver.url, events: ["license.created", "license.revoked"], status: "active" })
    expect(created.secret).toEqual(expect.any(String))
    const id = String(created.id)
    expect((await server.json(["webhooks", "list"])).webhooks.map((w: any) => w.id)).toEqual([created.id])
    expect(await server.json(["webhooks", "update", id, "--events", "*"])).toMatchObject({ events: ["*"] })
    expect(await server.json(["webhooks", "ping", id])).toMatchObject({ delivered: true, response_status: 200 })
    await server.call("POST", "/licenses", {})
    const delivered = await eventually(async () => {
      const list = await server.json(["webhooks", "deliveries", id])
      expect(list.deliveries[0]).toMatchObject({ type: "license.created", status: "delivered" })
      return list.deliveries[0]
    }, { timeout: 30_000, interval: 200 })
    const redelivered = await server.json(["webhooks", "redeliver", id, String(delivered.id)])
    expect(redelivered).toMatchObject({ id: delivered.id, status: "pending" })
    const table = await server.run(["webhooks", "deliveries", id])
    expect(table.out).toMatch(new RegExp(`^${delivered.id}\\s+\\d+\\s+license\\.created\\s`, "m"))
    expect(await server.json(["webhooks", "delete", id])).toMatchObject({ deleted: true })
    const gone = await server.run(["webhooks", "ping", id])
    expect([gone.code, gone.err.split(":")[0]]).toEqual([1, "webhook_not_found"])
  })

  it("api-keys create, list and delete on the server; the new key works with the CLI, within its scope", async () => {
    const created = await server.json(["api-keys", "create", "--scope", "read", "--description", "cli-reader"])
    expect(created).toMatchObject({ scope: "read", description: "cli-reader" })
    const listed = await server.run(["api-keys", "list"])
    expect(listed.out).toMatch(new RegExp(`^${created.id}\\s+read\\s+${created.truncated_key}\\s+cli-reader\\s`, "m"))
    expect(listed.out).not.toContain(created.consumer_secret)
    const asReader = { LM_CONSUMER_KEY: created.consumer_key, LM_CONSUMER_SECRET: created.consumer_secret }
    expect((await server.run(["licenses", "list"], asReader)).code).toBe(0)
    const refused = await server.run(["licenses", "create"], asReader)
    expect([refused.code, refused.err.split(":")[0]]).toEqual([1, "rest_forbidden"])
    expect(await server.json(["api-keys", "delete", String(created.id)])).toEqual({ deleted: true, id: created.id })
    const revoked = await server.run(["licenses", "list"], asReader)
    expect([revoked.code, revoked.err.split(":")[0]]).toEqual([1, "rest_unauthorized"])
  })

  it("releases publish uploads the file with a progress bar ending at 100%; list shows it; delete removes it", async () => {
    const file = join(dir, "app-1.2.0.zip")
    writeFileSync(file, Buffer.alloc(3 * 1024 * 1024, 7))
    const published = await server.run(["releases", "publish", file, "--product-id", "41", "--version", "1.2.0", "--channel", "beta", "--json"])
    expect(published.code, published.err).toBe(0)
    expect(JSON.parse(published.out)).toMatchObject({ product_id: 41, version: "1.2.0", channel: "beta", filename: "app-1.2.0.zip", size: 3 * 1024 * 1024 })
    const progress = published.err.trim().split("\n")
    expect(progress.length).toBeGreaterThan(2)
    expect(progress[0]).toBe(`[${"-".repeat(30)}]   0% 0 B/3.0 MiB`)
    expect(progress.at(-1)).toBe(`[${"#".repeat(30)}] 100% 3.0 MiB/3.0 MiB`)
    const listed = await server.json(["releases", "list", "--product-id", "41"])
    expect(listed.releases.map((r: any) => r.version)).toEqual(["1.2.0"])
    const again = await server.run(["releases", "publish", file, "--product-id", "41", "--version", "1.2.0"])
    expect([again.code, again.err.trim().split("\n").at(-1)!.split(":")[0]]).toEqual([1, "release_exists"])
    const deleted = await server.json(["releases", "delete", String(listed.releases[0].id)])
    expect(deleted).toEqual({ deleted: true, id: listed.releases[0].id })
    expect((await server.json(["releases", "list", "--product-id", "41"])).releases).toEqual([])
    const missing = await lm(["releases", "publish", file, "--product-id", "41", "--version", "1.3.0"])
    expect([missing.code, missing.err]).toEqual([2, expect.stringContaining("LM_URL is not set")])
  })
})
