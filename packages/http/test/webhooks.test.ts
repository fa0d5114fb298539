/**
 * Webhooks over real HTTP (CONTRACT §11), on the memory store and on PGlite, delivering to a real node:http
 * receiver on loopback: the routes and their refusals, the secret sealed at rest, deliveries signed (checked with
 * node:crypto), filtering and `*`, retries then `failed`, redelivery, ping, disabled webhooks (by PUT, and after
 * a day of failures with `webhook.disabled`), refusal of forbidden addresses (also the address a host name
 * resolves to), and delivery off the request path. That every event kind arrives: webhook-events.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { LookupFunction } from "node:net"
import { Effect } from "effect"
import { Ports } from "@lm/domain"
import { startApp, type TestApp } from "./support/App.js"
import { activate, createLicense, expectError, expectInvalid, expectList, expectOk, isoTime } from "./support/Management.js"
import { eventually } from "../../../test/support/eventually.js"
import { arrival, type Received, type Receiver, startReceiver, verifySignature } from "../../../test/support/receiver.js"

/** Tests reach the receiver on loopback over http: both settings are on unless a test says otherwise. */
const loopback = { allowInsecure: true, allowPrivate: true }

const register = async (app: TestApp, url: string, events: ReadonlyArray<string> = ["*"]) =>
  expectOk(await app.call("POST", "/webhooks", { body: { name: "test", url, events } }), 201)

for (const store of ["memory", "pglite"] as const) {
  describe(`webhooks on ${store}`, () => {
    let app: TestApp
    let receiver: Receiver
    let hook: any
    beforeAll(async () => {
      receiver = await startReceiver()
      // Delivery in the background (its subject here), looking for work every 50 ms instead of 500.
      app = await startApp(store, { sweepIntervalSeconds: 1, webhooks: { ...loopback, retrySchedule: [0, 0], pollMillis: 50 } })
      hook = await register(app, receiver.url)
    })
    afterAll(async () => {
      await app?.close()
      await receiver?.close()
    })

    describe("routes", () => {
      it("POST answers 201 with the secret once; GET, list and PUT never show it; DELETE removes it", async () => {
        expect(hook).toEqual({
          id: expect.any(Number),
          name: "test",
          url: receiver.url,
          events: ["*"],
          status: "active",
          created_at: expect.stringMatching(isoTime),
          secret: expect.stringMatching(/^whsec_[0-9a-f]{48}$/)
        })
        const other = await register(app, receiver.url, ["license.created", "license.created"])
        expect(other.events).toEqual(["license.created"])
        const { secret: _, ...shown } = other
        expect(expectOk(await app.call("GET", `/webhooks/${other.id}`))).toEqual(shown)
        const listed = expectList(await app.call("GET", "/webhooks?per_page=100"), "webhooks", { total: 2, per_page: 100 })
        expect(listed.map((w: any) => w.id)).toEqual([hook.id, other.id])
        expect(listed.every((w: any) => !("secret" in w))).toBe(true)
        const changed = expectOk(await app.call("PUT", `/webhooks/${other.id}`, { body: { name: "renamed", events: ["machine.activated"] } }))
        expect(changed).toEqual({ ...shown, name: "renamed", events: ["machine.activated"] })
        expect(expectOk(await app.call("DELETE", `/webhooks/${other.id}`))).toEqual({ deleted: true, id: other.id })
        expectError(await app.call("GET", `/webhooks/${other.id}`), 404, "webhook_not_found")
        expectError(await app.call("DELETE", `/webhooks/${other.id}`), 404, "webhook_not_found")
        expectError(await app.call("PUT", `/webhooks/${other.id}`, { body: { name: "x" } }), 404, "webhook_not_found")
        expectError(await app.call("POST", `/webhooks/${other.id}/ping`), 404, "webhook_not_found")
        expectError(await app.call("GET", `/webhooks/${other.id}/deliveries`), 404, "webhook_not_found")
        expectError(await app.call("POST", `/webhooks/${hook.id}/deliveries/999999/redeliver`), 404, "webhook_not_found")
      })

      it("refuses missing and unknown fields, unknown events and bad URLs with 400 naming the field", async () => {
        expectInvalid(await app.call("POST", "/webhooks", { body: { events: ["*"] } }), "url")
        expectInvalid(await app.call("POST", "/webhooks", { body: { url: receiver.url } }), "events")
        expectInvalid(await app.call("POST", "/webhooks", { body: { url: receiver.url, events: ["license.exploded"] } }), "events")
        expectInvalid(await app.call("POST", "/webhooks", { body: { url: receiver.url, events: [] } }), "events")
        expectInvalid(await app.call("POST", "/webhooks", { body: { url: "not a url", events: ["*"] } }), "url")
        expectInvalid(await app.call("POST", "/webhooks", { body: { url: receiver.url, events: ["*"], secret: "mine" } }), "secret")
        expectInvalid(await app.call("PUT", `/webhooks/${hook.id}`, { body: { status: "paused" } }), "status")
        expectError(await app.call("GET", "/webhooks", { auth: null }), 401, "rest_unauthorized")
      })

      it("keeps the secret sealed with the master key in the store", async () => {
        const stored = await app.run(Effect.flatMap(Effect.service(Ports.WebhookRepository), (repo) => repo.findById(hook.id)))
        expect(stored!.sealedSecret.startsWith("lm-sealed:v1:")).toBe(true)
        expect(stored!.sealedSecret).not.toContain(hook.secret)
        expect(stored!.sealedSecret).not.toContain(hook.secret.slice("whsec_".length))
      })
    })

    describe("delivery", () => {
      it("POSTs {id, type, created_at, data} signed with the secret, and logs the delivery", async () => {
        const license = await createLicense(app, {})
        const request = await arrival(receiver, "license.created", (r) => r.body.data?.license_key === license.license_key)
        expect(verifySignature(request, hook.secret)).toBe(true)
        expect(verifySignature(request, "whsec_wrong")).toBe(false)
        expect(request.headers["content-type"]).toBe("application/json")
        expect(request.body).toEqual({ id: expect.any(Number), type: "license.created", created_at: expect.stringMatching(isoTime), data: expect.any(Object) })
        const deliveryId = Number(request.headers["x-lm-delivery"])
        const delivery = await eventually(async () => {
          const res = await app.call("GET", `/webhooks/${hook.id}/deliveries?per_page=100`)
          const deliveries = expectList(res, "deliveries", { total: res.body.meta.total, per_page: 100 })
          expect(deliveries.map((d: any) => d.id)).toEqual([...deliveries.map((d: any) => d.id)].sort((a, b) => b - a))
          const found = deliveries.find((d: any) => d.id === deliveryId)
          expect(found?.status).toBe("delivered")
          return found
        })
        expect(delivery).toEqual({
          id: deliveryId,
          event_id: request.body.id,
          type: "license.created",
          status: "delivered",
          attempts: 1,
          response_status: 200,
          response_excerpt: "ok",
          last_attempt_at: expect.stringMatching(isoTime),
          next_attempt_at: null,
          created_at: expect.stringMatching(isoTime)
        })
      })

      it("sends only the events a webhook subscribed to", async () => {
        const second = await startReceiver()
        try {
          const only = await register(app, second.url, ["machine.activated"])
          const license = await createLicense(app, {})
          await activate(app, license.license_key, "filter-fp")
          await arrival(second, "machine.activated")
          await arrival(receiver, "machine.activated", (r) => r.body.data?.fingerprint === "filter-fp")
          // The catch-all webhook got the license.created that came first; this one got only what it asked for.
          await arrival(receiver, "license.created", (r) => r.body.data?.license_key === license.license_key)
          expect(second.received.map((r) => r.headers["x-lm-event"])).toEqual(["machine.activated"])
          expect(verifySignature(second.received[0]!, only.secret)).toBe(true)
          await app.call("DELETE", `/webhooks/${only.id}`)
        } finally {
          await second.close()
        }
      })

      it("retries a failing receiver on the schedule, then marks the delivery failed; redeliver sends it again", async () => {
        const failing = await startReceiver()
        try {
          failing.respond = 503
          const target = await register(app, failing.url, ["license.suspended"])
          const key = (await createLicense(app, {})).license_key
          expectOk(await app.call("POST", `/licenses/${key}/suspend`))
          // The schedule of this app is [0, 0]: three attempts, then failed.
          const failed = await eventually(async () => {
            const [delivery] = expectList(await app.call("GET", `/webhooks/${target.id}/deliveries`), "deliveries", { total: 1 })
            expect(delivery.status).toBe("failed")
            return delivery
          }, { timeout: 20_000, interval: 50 })
          expect(failed).toMatchObject({ attempts: 3, response_status: 503, response_excerpt: "nope 503", next_attempt_at: null })
          expect(failing.received).toHaveLength(3)
          const ids = new Set(failing.received.map((r) => `${r.headers["x-lm-delivery"]}/${r.body.id}`))
          expect(ids.size, "the delivery id and the event id stay the same on every attempt").toBe(1)

          failing.respond = 200
          const queued = expectOk(await app.call("POST", `/webhooks/${target.id}/deliveries/${failed.id}/redeliver`), 202)
          expect(queued).toMatchObject({ id: failed.id, status: "pending", attempts: 3 })
          const delivered = await eventually(async () => {
            const [delivery] = expectList(await app.call("GET", `/webhooks/${target.id}/deliveries`), "deliveries", { total: 1 })
            expect(delivery.status).toBe("delivered")
            return delivery
          }, { timeout: 20_000, interval: 50 })
          expect(delivered).toMatchObject({ attempts: 4, response_status: 200 })
          expect(failing.received).toHaveLength(4)
          expect(verifySignature(failing.received[3]!, target.secret)).toBe(true)
          await app.call("DELETE", `/webhooks/${target.id}`)
        } finally {
          await failing.close()
        }
      }, 60_000)

      it("a disabled webhook receives nothing (nothing is queued for it); PUT status active re-enables it", async () => {
        const paused = await startReceiver()
        try {
          const target = await register(app, paused.url, ["license.revoked"])
          expect(expectOk(await app.call("PUT", `/webhooks/${target.id}`, { body: { status: "disabled" } })).status).toBe("disabled")
          const key = (await createLicense(app, {})).license_key
          expectOk(await app.call("POST", `/licenses/${key}/revoke`))
          // The catch-all webhook got it (so it was dispatched); the disabled one got no delivery.
          await arrival(receiver, "license.revoked", (r) => r.body.data?.license_key === key)
          expectList(await app.call("GET", `/webhooks/${target.id}/deliveries`), "deliveries", { total: 0 })
          expect(paused.received).toHaveLength(0)
          expect(expectOk(await app.call("PUT", `/webhooks/${target.id}`, { body: { status: "active" } })).status).toBe("active")
          const next = (await createLicense(app, {})).license_key
          expectOk(await app.call("POST", `/licenses/${next}/revoke`))
          const request = await arrival(paused, "license.revoked")
          expect(request.body.data.license_key).toBe(next)
          expect(paused.received).toHaveLength(1)
          await app.call("DELETE", `/webhooks/${target.id}`)
        } finally {
          await paused.close()
        }
      }, 60_000)

      it("a webhook failing for a day is disabled with webhook.disabled (its peers get it, it does not); PUT status active re-enables it", async () => {
        const dead = await startReceiver()
        const watcher = await startReceiver()
        try {
          dead.respond = 503
          const target = await register(app, dead.url, ["*"])
          const watching = await register(app, watcher.url, ["webhook.disabled"])
          // A day of failures already behind it: the next failed attempt disables it.
          const failingSince = Date.now() - 24 * 3600_000 - 1_000
          await app.run(Effect.flatMap(Effect.service(Ports.WebhookRepository), (repo) =>
            Effect.flatMap(repo.findById(target.id), (w) => repo.update({ ...w!, failingSince }))))
          const key = (await createLicense(app, {})).license_key
          const isTarget = (r: Received) => r.body.data?.webhook?.id === target.id
          const announced = await arrival(receiver, "webhook.disabled", isTarget)
          expect(announced.body.data).toEqual({
            webhook: { id: target.id, name: "test", url: dead.url, events: ["*"], status: "disabled", created_at: target.created_at },
            reason: "every delivery attempt has failed for 24 hours",
            failing_since: new Date(failingSince).toISOString()
          })
          expect(announced.raw).not.toContain(target.secret)
          expect(verifySignature(announced, hook.secret)).toBe(true)
          const watched = await arrival(watcher, "webhook.disabled", isTarget)
          expect(verifySignature(watched, watching.secret)).toBe(true)
          expect(expectOk(await app.call("GET", `/webhooks/${target.id}`)).status).toBe("disabled")
          // Once, and never to the disabled webhook itself: nothing is queued for it.
          expect(receiver.received.filter((r) => r.headers["x-lm-event"] === "webhook.disabled" && isTarget(r))).toHaveLength(1)
          const log = expectList(await app.call("GET", `/webhooks/${target.id}/deliveries?per_page=100`), "deliveries", { total: 1, per_page: 100 })
          expect(log).toMatchObject([{ type: "license.created", status: "pending", attempts: 1, response_status: 503 }])
          expect(dead.received.map((r) => r.headers["x-lm-event"])).toEqual(["license.created"])

          // Re-enabled, it gets its pending delivery, and its failing streak starts over: one more failure does not disable it.
          dead.respond = 200
          expect(expectOk(await app.call("PUT", `/webhooks/${target.id}`, { body: { status: "active" } })).status).toBe("active")
          await arrival(dead, "license.created", (r) => r.body.data?.license_key === key && dead.received.indexOf(r) > 0)
          dead.respond = 503
          const next = (await createLicense(app, {})).license_key
          await eventually(async () => {
            const deliveries = expectList(await app.call("GET", `/webhooks/${target.id}/deliveries?per_page=100`), "deliveries", { total: 2, per_page: 100 })
            expect(deliveries[0]).toMatchObject({ type: "license.created", status: "failed" })
          }, { timeout: 20_000, interval: 50 })
          expect(dead.received.filter((r) => r.body.data?.license_key === next).length).toBeGreaterThan(0)
          expect(expectOk(await app.call("GET", `/webhooks/${target.id}`)).status).toBe("active")
          await app.call("DELETE", `/webhooks/${target.id}`)
          await app.call("DELETE", `/webhooks/${watching.id}`)
        } finally {
          await dead.close()
          await watcher.close()
        }
      }, 60_000)

      it("ping delivers webhook.ping now and reports it", async () => {
        const result = expectOk(await app.call("POST", `/webhooks/${hook.id}/ping`))
        expect(result).toEqual({ delivered: true, response_status: 200, duration_ms: expect.any(Number), error: null })
        const request = await arrival(receiver, "webhook.ping")
        expect(request.body).toMatchObject({ id: 0, type: "webhook.ping", data: { webhook_id: hook.id } })
        expect(verifySignature(request, hook.secret)).toBe(true)
      })

      it("never delivers on the request path: a receiver that never answers does not hold up the API", async () => {
        const stuck = await startReceiver()
        try {
          stuck.respond = "hang"
          const target = await register(app, stuck.url, ["license.created"])
          // This app's attempts time out after 10 s; answers below come while the receiver still holds the request.
          const key = (await createLicense(app, {})).license_key
          await arrival(stuck, "license.created", (r) => r.body.data?.license_key === key)
          const again = await createLicense(app, {})
          expect(again.license_key).not.toBe(key)
          expect(stuck.received.filter((r) => r.body.data?.license_key === again.license_key)).toHaveLength(0)
          await app.call("DELETE", `/webhooks/${target.id}`)
        } finally {
          await stuck.close()
        }
      }, 60_000)
    })
  })
}

describe("forbidden addresses", () => {
  let app: TestApp
  let receiver: Receiver
  /** Every host name resolves to `resolved.address` (127.0.0.1 unless a test says otherwise), as a rebinding DNS answer would make it. */
  const resolved = { address: "127.0.0.1" }
  const toLoopback: LookupFunction = (_hostname, options, callback) => {
    const family = resolved.address.includes(":") ? 6 : 4
    return options.all ? callback(null, [{ address: resolved.address, family }]) : callback(null, resolved.address, family)
  }
  beforeAll(async () => {
    receiver = await startReceiver()
    app = await startApp("memory", { webhooks: { allowInsecure: true, allowPrivate: false, retrySchedule: [] }, webhookSender: { lookup: toLoopback } })
  })
  afterAll(async () => {
    await app?.close()
    await receiver?.close()
  })

  it("refuses loopback, private, link-local, unspecified and localhost URLs with 400 naming url", async () => {
    for (const url of ["http://127.0.0.1:9/", "http://10.1.2.3/", "http://172.16.0.9/", "http://192.168.0.1/", "http://169.254.169.254/latest",
      "http://[::1]/", "http://[fd00::1]/", "http://[fe80::1]/", "http://0.0.0.0/", "http://localhost:8080/", "http://[::ffff:127.0.0.1]/",
      // IPv6 forms that carry a forbidden IPv4 address (mapped in hex, NAT64, 6to4), other special ranges, IPv4 in other notations.
      "http://[::ffff:7f00:1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::]/", "http://[64:ff9b:1::a00:1]/", "http://100.64.0.1/",
      "http://198.18.0.1/", "http://224.0.0.1/", "http://255.255.255.255/", "http://2130706433/", "http://0x7f.1/"]) {
      const params = expectInvalid(await app.call("POST", "/webhooks", { body: { url, events: ["*"] } }), "url")
      expect(params.url).toContain("LM_WEBHOOK_ALLOW_PRIVATE=1")
    }
  })

  it("refuses http unless LM_WEBHOOK_ALLOW_INSECURE (here on the strict default)", async () => {
    const strict = await startApp("memory", {})
    try {
      const params = expectInvalid(await strict.call("POST", "/webhooks", { body: { url: "http://hooks.example.com/", events: ["*"] } }), "url")
      expect(params.url).toBe("must be an https URL (the server allows http with LM_WEBHOOK_ALLOW_INSECURE=1)")
      expectOk(await strict.call("POST", "/webhooks", { body: { url: "https://hooks.example.com/", events: ["*"] } }), 201)
    } finally {
      await strict.close()
    }
  })

  it("checks the address actually connected to: a host name that resolves to loopback gets nothing", async () => {
    const target = await register(app, `http://receiver.test:${receiver.port}/hook`, ["license.created"])
    const ping = expectOk(await app.call("POST", `/webhooks/${target.id}/ping`))
    expect(ping).toMatchObject({ delivered: false, response_status: null })
    expect(ping.error).toContain("127.0.0.1")
    await createLicense(app, {})
    const [delivery] = await eventually(async () => {
      const deliveries = expectList(await app.call("GET", `/webhooks/${target.id}/deliveries`), "deliveries", { total: 1 })
      expect(deliveries[0].status).toBe("failed")
      return deliveries
    }, { timeout: 20_000, interval: 50 })
    expect(delivery).toMatchObject({ attempts: 1, response_status: null })
    expect(delivery.response_excerpt).toContain("refused to connect to 127.0.0.1")
    expect(receiver.received).toHaveLength(0)
  })

  it("judges an IPv6 address a name resolves to by the IPv4 address it carries (mapped, NAT64, 6to4)", async () => {
    const target = await register(app, `http://receiver.test:${receiver.port}/hook`, ["license.created"])
    try {
      for (const address of ["::ffff:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::1", "::ffff:169.254.169.254"]) {
        resolved.address = address
        const ping = expectOk(await app.call("POST", `/webhooks/${target.id}/ping`))
        expect(ping, address).toMatchObject({ delivered: false, response_status: null })
        expect(ping.error, address).toContain(`refused to connect to ${address}`)
      }
      expect(receiver.received).toHaveLength(0)
    } finally {
      resolved.address = "127.0.0.1"
      await app.call("DELETE", `/webhooks/${target.id}`)
    }
  })
})
