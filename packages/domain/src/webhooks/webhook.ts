/**
 * The rules of webhooks (CONTRACT §11), pure: which URLs and addresses a webhook may reach, which events it
 * receives, what a delivery sends and how it is signed, and what an attempt's outcome does to the delivery
 * (retry on the schedule, then `failed`) and to the webhook (disabled after a day of failures).
 */
import { createHmac, createSecretKey, type KeyObject } from "node:crypto"
import { BlockList, isIP } from "node:net"
import { Result } from "effect"
import { invalidParam, InvalidParam } from "../shared/errors.js"
import type { DomainEvent, StoredEvent } from "../shared/model.js"
import { isoTime } from "../shared/time.js"
import { webhookEventTypes } from "./events.js"
import { allWebhookEvents, type Webhook, type WebhookDelivery, type WebhookDeliveryDraft } from "./model.js"

/** The retry delays in seconds after each failed attempt (`LM_WEBHOOK_RETRY_SCHEDULE`): 30 s … 24 h. */
export const defaultRetrySchedule: ReadonlyArray<number> = [30, 120, 600, 3600, 21600, 86400]

/**
 * How long a process's claim on a delivery lasts for an attempt that may take `attemptTimeoutMillis`: twice that
 * plus 5 s, after which another process (or the same one after a crash) attempts it again.
 */
export const leaseMillisFor = (attemptTimeoutMillis: number): number => attemptTimeoutMillis * 2 + 5_000

/** Milliseconds one delivery attempt may take in all (`LM_WEBHOOK_TIMEOUT`, 10 s). */
export const defaultAttemptTimeoutMillis = 10_000

/** How long every attempt of a webhook may fail before it is disabled: a day. */
export const disableAfterMillis = 24 * 60 * 60 * 1000

/** The most of a response body a delivery keeps (1 KiB). */
export const responseExcerptBytes = 1024

/** What a webhook may reach: `LM_WEBHOOK_ALLOW_INSECURE` (http too), `LM_WEBHOOK_ALLOW_PRIVATE` (any address). */
export interface WebhookReach {
  readonly allowInsecure: boolean
  readonly allowPrivate: boolean
}

/** The settings of the bundled server that widen a webhook's reach, named by the refusals they lift. */
export const webhookReachSettings = {
  allowInsecure: "LM_WEBHOOK_ALLOW_INSECURE",
  allowPrivate: "LM_WEBHOOK_ALLOW_PRIVATE"
} as const satisfies Record<keyof WebhookReach, string>

/** The refusal of an address a webhook may not reach, with the setting that allows it. */
export const forbiddenAddressProblem =
  `must not point to a loopback, private, link-local, unspecified or other special-purpose address (the server allows them with ${webhookReachSettings.allowPrivate}=1)`

/**
 * IPv4 ranges no webhook may reach (IANA special-purpose registry): "this network" and unspecified, private
 * (RFC 1918), shared (CGNAT), loopback, link-local (cloud metadata), IETF protocol assignments, documentation,
 * the old 6to4 relay, benchmarking, multicast, and reserved up to the broadcast address.
 */
const forbiddenV4 = new BlockList()
for (const [network, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const) forbiddenV4.addSubnet(network, bits, "ipv4")

/**
 * IPv6 ranges no webhook may reach, besides those that embed an IPv4 address (judged by it, below): unique local
 * (fc00::/7), link-local (fe80::/10), the old site-local (fec0::/10), multicast, discard-only, IETF protocol
 * assignments (Teredo and benchmarking among them), documentation, SRv6 SIDs, and local-use NAT64
 * (64:ff9b:1::/48: where its IPv4 address sits is the operator's choice, so it cannot be judged by it).
 */
const forbiddenV6 = new BlockList()
for (const [network, bits] of [
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["3fff::", 20],
  ["5f00::", 16],
  ["64:ff9b:1::", 48]
] as const) forbiddenV6.addSubnet(network, bits, "ipv6")

/** The eight 16-bit groups of an IPv6 address (the URL parser validates it and writes it canonically: hex groups, one `::` at most). */
const ipv6Groups = (address: string): Array<number> => {
  const [head = "", tail] = new URL(`http://[${address}]/`).hostname.slice(1, -1).split("::")
  const groups = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const before = groups(head)
  const after = groups(tail)
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after]
}

const v4Of = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`

/**
 * The IPv4 address an IPv6 address carries, where the IPv6 address reaches that IPv4 host: IPv4-compatible
 * (::/96, `::` and `::1` included), IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64
 * (64:ff9b::/96) and 6to4 (2002::/16).
 */
const embeddedV4 = (g: ReadonlyArray<number>): string | undefined => {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 6) || (zeros(0, 5) && g[5] === 0xffff) || (zeros(0, 4) && g[4] === 0xffff && g[5] === 0)) return v4Of(g[6]!, g[7]!)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4Of(g[6]!, g[7]!)
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!)
  return undefined
}

/**
 * Whether an IP address is one a webhook must not reach unless `LM_WEBHOOK_ALLOW_PRIVATE`: loopback, private
 * (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10: cloud metadata lives there), unspecified, shared,
 * multicast, broadcast or another special-purpose range. An IPv6 address that carries an IPv4 address (mapped,
 * compatible, NAT64, 6to4) is judged by that IPv4 address too. Text that is not an IP address is not forbidden
 * here (host names are checked on the address they resolve to).
 */
export const isForbiddenAddress = (address: string): boolean => {
  // `[::1]` as a URL writes it; `fe80::1%eth0` as a socket may report it (the zone does not change the address).
  const bare = (address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address).replace(/%.*$/, "")
  switch (isIP(bare)) {
    case 4:
      return forbiddenV4.check(bare, "ipv4")
    case 6: {
      if (forbiddenV6.check(bare, "ipv6")) return true
      const v4 = embeddedV4(ipv6Groups(bare))
      return v4 !== undefined && forbiddenV4.check(v4, "ipv4")
    }
    default:
      return false
  }
}

/** Whether `address` may be connected to under these settings. */
export const mayConnectTo = (address: string, reach: WebhookReach): boolean => reach.allowPrivate || !isForbiddenAddress(address)

/**
 * A webhook URL checked: absolute, `https` (or `http` with `allowInsecure`), without credentials, and not naming
 * a forbidden address or `localhost` (unless `allowPrivate`). Each refusal is 400 naming `url`.
 */
export const checkUrl = (text: string, reach: WebhookReach): Result.Result<string, InvalidParam> => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Result.fail(invalidParam("url", "must be an absolute URL"))
  }
  if (url.protocol !== "https:" && !(reach.allowInsecure && url.protocol === "http:")) {
    return Result.fail(invalidParam(
      "url",
      reach.allowInsecure
        ? "must be an http or https URL"
        : `must be an https URL (the server allows http with ${webhookReachSettings.allowInsecure}=1)`
    ))
  }
  if (url.username !== "" || url.password !== "") return Result.fail(invalidParam("url", "must not carry credentials"))
  const host = url.hostname.toLowerCase()
  const local = host === "localhost" || host.endsWith(".localhost") || isForbiddenAddress(host)
  if (local && !reach.allowPrivate) {
    return Result.fail(invalidParam("url", forbiddenAddressProblem))
  }
  return Result.succeed(url.toString())
}

/** The subscription checked: `["*"]` or names of the contract's list, at least one, each once. */
export const checkEvents = (events: ReadonlyArray<string>): Result.Result<ReadonlyArray<string>, InvalidParam> => {
  if (events.length === 0) return Result.fail(invalidParam("events", "must name at least one event, or \"*\""))
  const known: ReadonlySet<string> = new Set<string>([...webhookEventTypes, allWebhookEvents])
  const unknown = events.find((e) => !known.has(e))
  if (unknown !== undefined) return Result.fail(invalidParam("events", `unknown event: ${unknown}`))
  return Result.succeed(events.includes(allWebhookEvents) ? [allWebhookEvents] : [...new Set(events)])
}

/** Whether a webhook receives events of this type. */
export const subscribes = (webhook: Pick<Webhook, "events" | "status">, type: string): boolean =>
  webhook.status === "active" && (webhook.events.includes(allWebhookEvents) || webhook.events.includes(type))

/** The deliveries an event fans out to: one per active webhook that subscribes to its type. */
export const deliveriesOf = (
  event: StoredEvent,
  webhooks: ReadonlyArray<Webhook>,
  now: number
): Array<WebhookDeliveryDraft> =>
  webhooks.filter((webhook) => subscribes(webhook, event.type)).map((webhook) => ({
    webhookId: webhook.id,
    eventId: event.id,
    type: event.type,
    status: "pending",
    attempts: 0,
    responseStatus: null,
    responseExcerpt: null,
    lastAttemptAt: null,
    nextAttemptAt: now,
    lockedUntil: null,
    createdAt: now
  }))

/** The body a delivery POSTs: `{id, type, created_at, data}` (the event's id, the same on every attempt). */
export const deliveryBody = (event: { readonly id: number; readonly type: string; readonly occurredAt: number; readonly data: unknown }): string =>
  JSON.stringify({ id: event.id, type: event.type, created_at: new Date(event.occurredAt).toISOString(), data: event.data })

/**
 * The HMAC key of a webhook's secret (its UTF-8 bytes), made once per opened secret: keying an HMAC with a
 * key object costs a sixth of keying it with fresh bytes, and a batch signs many deliveries with one secret.
 */
export const signingKeyOf = (secret: string): KeyObject => createSecretKey(Buffer.from(secret, "utf8"))

/** `X-LM-Signature`: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the secret's {@link signingKeyOf}. */
export const signatureHeader = (key: KeyObject, unixSeconds: number, body: string): string =>
  `t=${unixSeconds},v1=${createHmac("sha256", key).update(`${unixSeconds}.${body}`, "utf8").digest("hex")}`

/** The headers of a delivery attempt. */
export const deliveryHeaders = (
  key: KeyObject,
  now: number,
  body: string,
  ids: { readonly type: string; readonly deliveryId: string }
): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "lm-webhooks/1",
  "x-lm-event": ids.type,
  "x-lm-delivery": ids.deliveryId,
  "x-lm-signature": signatureHeader(key, Math.floor(now / 1000), body)
})

/** What one attempt came to: an HTTP status and the start of the body, or a failure before any response. */
export type AttemptOutcome =
  | { readonly _tag: "Response"; readonly status: number; readonly excerpt: string }
  | { readonly _tag: "Failed"; readonly error: string }

/** Whether an outcome delivered the event (any 2xx). */
export const delivered = (outcome: AttemptOutcome): boolean =>
  outcome._tag === "Response" && outcome.status >= 200 && outcome.status < 300

/**
 * A delivery after an attempt: delivered on a 2xx; otherwise retried after the schedule's delay for this attempt
 * (the n-th failure waits `schedule[n-1]` seconds), and `failed` once the schedule is spent. The lock is released.
 */
export const afterAttempt = (
  delivery: WebhookDelivery,
  outcome: AttemptOutcome,
  now: number,
  schedule: ReadonlyArray<number>
): WebhookDelivery => {
  const attempts = delivery.attempts + 1
  const recorded = {
    ...delivery,
    attempts,
    lastAttemptAt: now,
    lockedUntil: null,
    responseStatus: outcome._tag === "Response" ? outcome.status : null,
    responseExcerpt: truncateExcerpt(outcome._tag === "Response" ? outcome.excerpt : outcome.error)
  }
  if (delivered(outcome)) return { ...recorded, status: "delivered", nextAttemptAt: null }
  const delay = schedule[attempts - 1]
  return delay === undefined
    ? { ...recorded, status: "failed", nextAttemptAt: null }
    : { ...recorded, status: "pending", nextAttemptAt: now + delay * 1000 }
}

/** At most {@link responseExcerptBytes} bytes of text, cut on a character boundary. */
export const truncateExcerpt = (text: string): string => {
  const bytes = Buffer.from(text, "utf8")
  return bytes.length <= responseExcerptBytes ? text : bytes.subarray(0, responseExcerptBytes).toString("utf8").replace(/\uFFFD$/, "")
}

/**
 * A webhook after one of its attempts: a success clears its failing streak; a failure starts one, and once every
 * attempt has failed for {@link disableAfterMillis} the webhook is `disabled`. Unchanged when nothing moves.
 */
export const webhookAfterAttempt = (webhook: Webhook, success: boolean, now: number): Webhook => {
  if (success) return webhook.failingSince === null ? webhook : { ...webhook, failingSince: null, updatedAt: now }
  const since = webhook.failingSince ?? now
  const disable = webhook.status === "active" && now - since >= disableAfterMillis
  if (since === webhook.failingSince && !disable) return webhook
  return { ...webhook, failingSince: since, status: disable ? "disabled" : webhook.status, updatedAt: now }
}

/** Why a webhook was disabled, as `webhook.disabled` says. */
export const disabledReason = "every delivery attempt has failed for 24 hours"

/**
 * `webhook.disabled`, written with the change that disables a webhook: its public fields (never the secret), why,
 * and since when its attempts have failed. Webhooks subscribed to it (or to `*`) receive it; the disabled one does
 * not, being disabled in the same transaction.
 */
export const disabledEvent = (webhook: Webhook, now: number): DomainEvent => ({
  type: "webhook.disabled",
  occurredAt: now,
  licenseId: null,
  machineId: null,
  data: {
    webhook: {
      id: webhook.id,
      name: webhook.name,
      url: webhook.url,
      events: webhook.events,
      status: webhook.status,
      created_at: isoTime(webhook.createdAt)
    },
    reason: disabledReason,
    failing_since: webhook.failingSince === null ? null : isoTime(webhook.failingSince)
  }
})

/** A delivery queued for one more attempt now (redeliver): pending, due now, unlocked; its attempts are kept. */
export const redeliver = (delivery: WebhookDelivery, now: number): WebhookDelivery => ({
  ...delivery,
  status: "pending",
  nextAttemptAt: now,
  lockedUntil: null
})

/**
 * The retry schedule of `LM_WEBHOOK_RETRY_SCHEDULE`: whole seconds, comma separated (spaces allowed), each 0 or
 * more; an empty text is no retry at all.
 */
export const parseRetrySchedule = (text: string): Result.Result<ReadonlyArray<number>, string> => {
  const parts = text.split(",").map((p) => p.trim()).filter((p) => p !== "")
  const bad = parts.find((p) => !/^\d+$/.test(p))
  return bad === undefined
    ? Result.succeed(parts.map(Number))
    : Result.fail(`LM_WEBHOOK_RETRY_SCHEDULE must list whole seconds separated by commas (not ${JSON.stringify(bad)})`)
}
