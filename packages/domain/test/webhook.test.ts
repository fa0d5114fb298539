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
  /** Addresses and whether a webhook may not reach them (each row: the address, refused?, why). */
  const addresses: ReadonlyArray<readonly [string, boolean, string]> = [
    ["127.0.0.1", true, "loopback"],
    ["127.1.2.3", true, "loopback /8"],
    ["10.0.0.1", true, "RFC 1918"],
    ["172.16.0.1", true, "RFC 1918"],
    ["172.31.255.255", true, "RFC 1918, last"],
    ["192.168.1.1", true, "RFC 1918"],
    ["169.254.169.254", true, "link-local: cloud metadata"],
    ["0.0.0.0", true, "unspecified"],
    ["0.1.2.3", true, "this network 0/8"],
    ["100.64.0.1", true, "shared (CGNAT) first"],
    ["100.127.255.254", true, "shared (CGNAT) last"],
    ["192.0.0.170", true, "IETF protocol assignments (NAT64 discovery)"],
    ["192.0.2.1", true, "documentation"],
    ["198.18.0.1", true, "benchmarking"],
    ["198.19.255.255", true, "benchmarking /15"],
    ["224.0.0.1", true, "multicast"],
    ["239.255.255.250", true, "multicast (SSDP)"],
    ["240.0.0.1", true, "reserved"],
    ["255.255.255.255", true, "broadcast"],
    ["::1", true, "IPv6 loopback"],
    ["::", true, "IPv6 unspecified"],
    ["[::1]", true, "bracketed, as a URL writes it"],
    ["fc00::1", true, "unique local"],
    ["fd12:3456::1", true, "unique local"],
    ["fe80::1", true, "link-local"],
    ["fe80::1%eth0", true, "link-local with a zone"],
    ["fec0::1", true, "site-local"],
    ["ff02::1", true, "multicast"],
    ["2001:db8::1", true, "documentation"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", true, "Teredo"],
    ["::ffff:127.0.0.1", true, "IPv4-mapped loopback"],
    ["::ffff:7f00:1", true, "IPv4-mapped loopback, hex"],
    ["::FFFF:A9FE:A9FE", true, "IPv4-mapped metadata, upper-case hex"],
    ["::ffff:169.254.169.254", true, "IPv4-mapped metadata"],
    ["::ffff:0:10.0.0.1", true, "IPv4-translated private"],
    ["::127.0.0.1", true, "IPv4-compatible loopback"],
    ["::a00:1", true, "IPv4-compatible private, hex"],
    ["64:ff9b::127.0.0.1", true, "NAT64 loopback"],
    ["64:ff9b::a9fe:a9fe", true, "NAT64 metadata, hex"],
    ["64:ff9b::192.168.0.1", true, "NAT64 private"],
    ["64:ff9b:1::a00:1", true, "local-use NAT64"],
    ["64:ff9b:1:ffff::808:808", true, "local-use NAT64, whatever it embeds"],
    ["2002:7f00:1::", true, "6to4 of loopback"],
    ["2002:a9fe:a9fe::1", true, "6to4 of metadata"],
    ["2002:c0a8:101::", true, "6to4 of 192.168.1.1"],
    ["93.184.216.34", false, "public IPv4"],
    ["8.8.8.8", false, "public IPv4"],
    ["172.32.0.1", false, "just past 172.16/12"],
    ["100.128.0.1", false, "just past 100.64/10"],
    ["198.20.0.1", false, "just past 198.18/15"],
    ["223.255.255.255", false, "just below multicast"],
    ["2606:4700::1111", false, "public IPv6"],
    ["2a00:1450:4001:81b::200e", false, "public IPv6"],
    ["::ffff:8.8.8.8", false, "IPv4-mapped public"],
    ["::ffff:808:808", false, "IPv4-mapped public, hex"],
    ["64:ff9b::8.8.8.8", false, "NAT64 of a public address"],
    ["2002:808:808::1", false, "6to4 of a public address"],
    ["example.com", false, "a host name: judged on what it resolves to"],
    ["not an address", false, "not an address"]
  ]

  it.each(addresses)("%s: refused %s (%s)", (address, refused) => {
    expect(Webhook.isForbiddenAddress(address)).toBe(refused)
    expect(Webhook.mayConnectTo(address, strict)).toBe(!refused)
    expect(Webhook.mayConnectTo(address, { allowInsecure: false, allowPrivate: true })).toBe(true)
    if (address.includes(" ") || address.startsWith("[")) return
    // The same rule judges the URL at registration (an IPv6 literal goes in brackets).
    const host = address.includes(":") ? `[${address.replace("%", "%25")}]` : address
    const url = Webhook.checkUrl(`https://${host}/hook`, strict)
    expect(Result.isFailure(url), `https://${host}/hook`).toBe(refused || address.includes("%"))
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
    expect(Webhook.signatureHeader(Webhook.signingKeyOf("whsec_é"), 1_700_000_000, body)).toBe(`t=1700000000,v1=${expected}`)
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

  it("webhook.disabled carries the webhook's public fields, why and since when, never its secret", () => {
    const disabled: Model.Webhook = { ...hook, name: "billing", status: "disabled", sealedSecret: "lm-sealed:v1:secret", failingSince: 1_000, createdAt: 0 }
    const event = Webhook.disabledEvent(disabled, 1_000 + Webhook.disableAfterMillis)
    expect(event).toEqual({
      type: "webhook.disabled",
      occurredAt: 1_000 + Webhook.disableAfterMillis,
      licenseId: null,
      machineId: null,
      data: {
        webhook: { id: 1, name: "billing", url: "https://example.com/", events: ["*"], status: "disabled", created_at: "1970-01-01T00:00:00.000Z" },
        reason: "every delivery attempt has failed for 24 hours",
        failing_since: "1970-01-01T00:00:01.000Z"
      }
    })
    expect(JSON.stringify(event)).not.toContain("lm-sealed")
    expect(Result.isSuccess(Webhook.checkEvents(["webhook.disabled"]))).toBe(true)
  })

  it("parses LM_WEBHOOK_RETRY_SCHEDULE", () => {
    expect(Webhook.parseRetrySchedule("30, 120,600")).toEqual(Result.succeed([30, 120, 600]))
    expect(Webhook.parseRetrySchedule("")).toEqual(Result.succeed([]))
    expect(Result.isFailure(Webhook.parseRetrySchedule("30,soon"))).toBe(true)
  })
})
