/**
 * The HTTP client of webhook deliveries, on undici: connect and total timeouts, no redirect followed (a 3xx is a
 * failed attempt), at most 1 KiB of the response body read, and the address check of CONTRACT §11 done where the
 * connection is made: host names are resolved through a lookup that drops forbidden addresses (so DNS rebinding
 * between registration and delivery cannot reach them), IP literals are checked before connecting, and the
 * socket's remote address is checked again once connected.
 */
import * as dns from "node:dns"
import type { LookupFunction, Socket } from "node:net"
import { Effect } from "effect"
import { Agent, buildConnector, request } from "undici"
import { type Engine, type Services, Webhook } from "@lm/domain"

/** Settings of the sender. */
export interface WebhookSenderOptions extends Webhook.WebhookReach {
  /** Milliseconds to open the connection (TCP and TLS), default 5,000. */
  readonly connectTimeoutMs?: number | undefined
  /** Milliseconds for the whole attempt, default 10,000. */
  readonly totalTimeoutMs?: number | undefined
  /** How host names are resolved (tests resolve every name to a chosen address); default `dns.lookup`. */
  readonly lookup?: LookupFunction | undefined
}

type Sender = (typeof Services.WebhookSender)["Service"]

/** Why an attempt made no request: the address is one a webhook may not reach. */
const forbidden = (address: string) =>
  Object.assign(new Error(`refused to connect to ${address}: loopback, private, link-local, unspecified and other special-purpose addresses are not allowed (the server allows them with ${Webhook.webhookReachSettings.allowPrivate}=1)`), {
    code: "LM_FORBIDDEN_ADDRESS"
  })

/** `lookup` with the forbidden addresses left out (an error when none is left). */
const guardedLookup = (lookup: LookupFunction, reach: Webhook.WebhookReach): LookupFunction =>
  (hostname, options, callback) =>
    lookup(hostname, options, (error, address, family) => {
      if (error !== null) return callback(error, address as string, family)
      if (Array.isArray(address)) {
        const allowed = address.filter((a) => Webhook.mayConnectTo(a.address, reach))
        return allowed.length === 0 ? callback(forbidden(address[0]?.address ?? hostname), []) : callback(null, allowed)
      }
      return Webhook.mayConnectTo(address, reach) ? callback(null, address, family) : callback(forbidden(address), address, family)
    })

/** The start of a response body: at most `bytes`, the rest discarded unread. */
const excerptOf = async (body: AsyncIterable<Uint8Array> & { destroy: () => unknown }, bytes: number): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk))
    size += chunk.length
    if (size >= bytes) break
  }
  body.destroy()
  return Webhook.truncateExcerpt(Buffer.concat(chunks).subarray(0, bytes).toString("utf8"))
}

/** A sender on its own undici agent, closed with the scope. */
export const make = (options: WebhookSenderOptions) =>
  Effect.gen(function*() {
    const reach = { allowInsecure: options.allowInsecure, allowPrivate: options.allowPrivate }
    const total = options.totalTimeoutMs ?? 10_000
    const connectTimeout = options.connectTimeoutMs ?? Math.min(5_000, total)
    const lookup = guardedLookup(options.lookup ?? (dns.lookup as unknown as LookupFunction), reach)
    const connect = buildConnector({ timeout: connectTimeout, lookup })
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          headersTimeout: total,
          bodyTimeout: total,
          // The address actually connected to is checked again: it is what the request reaches.
          connect: (opts, callback) =>
            connect(opts, (error, socket) => {
              if (error !== null) return callback(error, null)
              const remote = (socket as Socket).remoteAddress ?? ""
              if (!Webhook.mayConnectTo(remote, reach)) {
                socket.destroy()
                return callback(forbidden(remote), null)
              }
              callback(null, socket)
            })
        })
      ),
      (agent) => Effect.promise(() => agent.close()).pipe(Effect.timeout("2 seconds"), Effect.ignore)
    )
    const send: Sender["send"] = (req) =>
      Effect.promise(async (interrupted) => {
        const url = new URL(req.url)
        const host = url.hostname.replace(/^\[|\]$/g, "")
        if (!Webhook.mayConnectTo(host, reach)) return { _tag: "Failed", error: forbidden(host).message } as const
        if (url.protocol !== "https:" && !(reach.allowInsecure && url.protocol === "http:")) {
          return { _tag: "Failed", error: `refused: ${url.protocol} URLs are not allowed (LM_WEBHOOK_ALLOW_INSECURE)` } as const
        }
        // The attempt's own signal, aborted by its total timeout or the fiber's interruption; the timer is cleared
        // when the attempt ends (`AbortSignal.timeout` would fire for every attempt, long after it ended).
        const attempt = new AbortController()
        const timer = setTimeout(() => attempt.abort(new Error(`no answer within ${total} ms`)), total)
        const onInterrupt = () => attempt.abort(interrupted.reason)
        interrupted.addEventListener("abort", onInterrupt, { once: true })
        try {
          const response = await request(url, { method: "POST", headers: req.headers, body: req.body, dispatcher: agent, signal: attempt.signal })
          const excerpt = await excerptOf(response.body, Webhook.responseExcerptBytes)
          return { _tag: "Response", status: response.statusCode, excerpt } as const
        } catch (error) {
          const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ""
          return { _tag: "Failed", error: error instanceof Error ? `${error.message}${cause}` : String(error) } as const
        } finally {
          clearTimeout(timer)
          interrupted.removeEventListener("abort", onInterrupt)
        }
      })
    return { send } satisfies Sender
  })

/** Engine options with this sender for webhooks (its agent lives as long as the scope). */
export const withSender = (engineOptions: Engine.Options, senderOptions: Partial<WebhookSenderOptions> = {}) =>
  Effect.map(
    make({
      allowInsecure: engineOptions.webhooks?.allowInsecure ?? false,
      allowPrivate: engineOptions.webhooks?.allowPrivate ?? false,
      totalTimeoutMs: engineOptions.webhooks?.attemptTimeoutMillis,
      ...senderOptions
    }),
    (sender): Engine.Options => ({ ...engineOptions, webhooks: { ...engineOptions.webhooks, sender } })
  )
