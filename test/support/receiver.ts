/**
 * A webhook receiver for tests: a real node:http server on loopback that records every request (headers and raw
 * body) and answers with what `respond` says (200 by default; `"hang"` keeps the request open until `close`).
 * `verify` checks `X-LM-Signature` with node:crypto, independently of the service's code.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { expect } from "vitest"
import { eventually } from "./eventually.js"

/** One request the receiver got. */
export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly raw: string
  readonly body: any
}

export interface Receiver {
  /** `http://127.0.0.1:<port>/hook` */
  readonly url: string
  readonly port: number
  readonly received: Array<Received>
  /** What the next requests are answered with: a status, or `"hang"` (never answered). */
  respond: number | "hang"
  readonly close: () => Promise<void>
}

export const startReceiver = async (): Promise<Receiver> => {
  const hanging: Array<ServerResponse> = []
  const state = { respond: 200 as number | "hang" }
  const received: Array<Received> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      let body: unknown = raw
      try {
        body = JSON.parse(raw)
      } catch {
        // keep the text
      }
      received.push({ headers: req.headers, raw, body })
      if (state.respond === "hang") {
        hanging.push(res)
        return
      }
      res.writeHead(state.respond, { "content-type": "text/plain" }).end(state.respond < 300 ? "ok" : `nope ${state.respond}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    get respond() {
      return state.respond
    },
    set respond(value) {
      state.respond = value
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Whether a request's `X-LM-Signature` is `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. */
export const verifySignature = (request: Received, secret: string): boolean => {
  const header = String(request.headers["x-lm-signature"] ?? "")
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)
  if (match === null) return false
  const expected = createHmac("sha256", secret).update(`${match[1]}.${request.raw}`).digest()
  return timingSafeEqual(expected, Buffer.from(match[2]!, "hex"))
}

/** The first request of this event type the receiver got that `match` accepts (waited for, up to 20 s). */
export const arrival = (receiver: Receiver, type: string, match: (r: Received) => boolean = () => true) =>
  eventually(() => {
    const found = receiver.received.find((r) => r.headers["x-lm-event"] === type && match(r))
    expect(found, `no ${type} yet; got ${receiver.received.map((r) => r.headers["x-lm-event"]).join(", ")}`).toBeDefined()
    return found!
  }, { timeout: 20_000, interval: 50 })
