/**
 * The webhook rules (CONTRACT §11): forbidden addresses and URLs, event subscriptions, the signature, retries on
 * the schedule then `failed`, and a webhook disabled after a day of failures.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { createHmac } from "node:crypto"
import { type Model, Webhook } from "@lm/domain"

const strict = { allowInsecure: false, allowPrivate: false }

const delivery: Model.WebhookDelivery = {
  id: 7,
  webhookId: 1,
  eventId: 3,
  type: "license.created",
  status: "pending",
  attempts: 0,
  responseStatus: null,
  responseExcerpt: null,
  lastAttemptAt: null,
  nextAttemptAt: 0,
  lockedUntil: 60_000,
  createdAt: 0
}

const hook: Model.Webhook = {
  id: 1,
  name: "",
  url: "https://example.com/",
  events: ["*"],
  status: "active",
  sealedSecret: "x",
  failingSince: null,
  createdAt: 0,
  updatedAt: 0
}

describe("webhook rules", () => {
  it("forbids loopback, private, link-local, shared and unspecified addresses, IPv4 and IPv6 alike", () => {
    for (const address of ["127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
      "0.0.0.0", "100.64.0.1", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "[::1]"]) {
      expect(Webhook.isForbiddenAddress(address), address).toBe(true)
    }
    for (const address of ["93.184.216.34", "172.32.0.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "example.com"]) {
      expect(Webhook.isForbiddenAddress(address), address).toBe(false)
    }
    expect(Webhook.mayConnectTo("127.0.0.1", { allowInsecure: false, allowPrivate: true })).toBe(true)
  })

  it("accepts https URLs to public hosts; refuses http, credentials, localhost and forbidden literals, naming url", () => {
    expect(Result.isSuccess(Webhook.checkUrl("https://hooks.example.com/lm", strict))).toBe(true)
    for (const url of ["http://hooks.example.com/", "https://user:pw@example.com/", "https://localhost/", "https://127.0.0.1/",
      "https://[::1]:8443/", "https://169.254.169.254/latest/meta-data", "ftp://example.com/", "not a url"]) {
      const checked = Webhook.checkUrl(url, strict)
      expect(Result.isFailure(checked), url).toBe(true)
      if (Result.isFailure(checked)) expect(Object.keys(checked.failure.params)).toEqual(["url"])
    }
    expect(Result.isSuccess(Webhook.checkUrl("http://127.0.0.1:9/", { allowInsecure: true, allowPrivate: true }))).toBe(true)
    expect(Result.isFailure(Webhook.checkUrl("http://127.0.0.1:9/", { allowInsecure: true, allowPrivate: false }))).toBe(true)
  })

  it("events: names of the contract's list or *, unknown ones refused", () => {
    expect(Webhook.checkEvents(["license.created", "license.created"])).toEqual(Result.succeed(["license.created"]))
    expect(Webhook.checkEvents(["license.created", "*"])).toEqual(Result.succeed(["*"]))
    expect(Result.isFailure(Webhook.checkEvents(["license.exploded"]))).toBe(true)
    expect(Result.isFailure(Webhook.checkEvents([]))).toBe(true)
    expect(Webhook.subscribes({ events: ["machine.activated"], status: "active" }, "license.created")).toBe(false)
    expect(Webhook.subscribes({ events: ["*"], status: "disabled" }, "license.created")).toBe(false)
  })

  it("signs t.body with HMAC-SHA256 keyed by the secret's UTF-8 bytes", () => {
    const body = Webhook.deliveryBody({ id: 3, type: "license.created", occurredAt: 0, data: { a: 1 } })
    expect(JSON.parse(body)).toEqual({ id: 3, type: "license.created", created_at: "1970-01-01T00:00:00.000Z", data: { a: 1 } })
    const expected = createHmac("sha256", "whsec_é").update(`1700000000.${body}`).digest("hex")
    expect(Webhook.signatureHeader("whsec_é", 1_700_000_000, body)).toBe(`t=1700000000,v1=${expected}`)
  })

  it("a failed attempt waits the schedule's delay for its number; past the schedule it is failed; a 2xx delivers", () => {
    const fail = { _tag: "Response", status: 500, excerpt: "no" } as const
    const first = Webhook.afterAttempt(delivery, fail, 1_000, [30, 120])
    expect(first).toMatchObject({ status: "pending", attempts: 1, nextAttemptAt: 31_000, lockedUntil: null, responseStatus: 500, responseExcerpt: "no" })
    const second = Webhook.afterAttempt(first, { _tag: "Failed", error: "timeout" }, 31_000, [30, 120])
    expect(second).toMatchObject({ status: "pending", attempts: 2, nextAttemptAt: 151_000, responseStatus: null, responseExcerpt: "timeout" })
    expect(Webhook.afterAttempt(second, fail, 151_000, [30, 120])).toMatchObject({ status: "failed", attempts: 3, nextAttemptAt: null })
    expect(Webhook.afterAttempt(second, { _tag: "Response", status: 204, excerpt: "" }, 151_000, [30, 120]))
      .toMatchObject({ status: "delivered", attempts: 3, nextAttemptAt: null })
    expect(Webhook.afterAttempt(delivery, { _tag: "Response", status: 200, excerpt: "x".repeat(5000) }, 0, []).responseExcerpt).toHaveLength(1024)
  })

  it("a webhook whose attempts all failed for a day is disabled; a success clears the streak", () => {
    const failing = Webhook.webhookAfterAttempt(hook, false, 1_000)
    expect(failing).toMatchObject({ status: "active", failingSince: 1_000 })
    expect(Webhook.webhookAfterAttempt(failing, false, 1_000 + Webhook.disableAfterMillis - 1)).toBe(failing)
    expect(Webhook.webhookAfterAttempt(failing, false, 1_000 + Webhook.disableAfterMillis)).toMatchObject({ status: "disabled" })
    expect(Webhook.webhookAfterAttempt(failing, true, 2_000)).toMatchObject({ status: "active", failingSince: null })
    expect(Webhook.webhookAfterAttempt(hook, true, 2_000)).toBe(hook)
  })

  it("parses LM_WEBHOOK_RETRY_SCHEDULE", () => {
    expect(Webhook.parseRetrySchedule("30, 120,600")).toEqual(Result.succeed([30, 120, 600]))
    expect(Webhook.parseRetrySchedule("")).toEqual(Result.succeed([]))
    expect(Result.isFailure(Webhook.parseRetrySchedule("30,soon"))).toBe(true)
  })
})
