/**
 * The signature of a billing provider's webhook delivery, checked on the raw body as each provider documents,
 * with its official library where it has one (CONTRACT §20):
 * - Stripe: `Stripe-Signature` (`t=…,v1=…`), `stripe`'s `webhooks.constructEvent` with a 300 s tolerance;
 * - Paddle Billing: `Paddle-Signature` (`ts=…;h1=…`), `@paddle/paddle-node-sdk`'s webhook verification;
 * - Lemon Squeezy (no library): `X-Signature`, the hex HMAC-SHA256 of the body with the signing secret.
 * Each answers the parsed body, or `billing_signature_invalid`.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import type { Webhooks as PaddleWebhooks } from "@paddle/paddle-node-sdk"
import { Effect } from "effect"
import { Errors, type Model } from "@lm/domain"
import type Stripe from "stripe"

/** Stripe's tolerance for the age of a signature, in seconds (CONTRACT §20). */
export const stripeToleranceSeconds = 300

/** A verified delivery's body, parsed. */
export type VerifiedBody = Record<string, unknown>

type Headers = Readonly<Record<string, string | undefined>>

const invalid = (why: string) => Effect.fail(Errors.billingSignatureInvalid(why))

const parsed = (text: string): Effect.Effect<VerifiedBody, Errors.BillingSignatureInvalid> => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? Effect.succeed(value as VerifiedBody) : invalid("the body is not a JSON object")
  } catch {
    return invalid("the body is not JSON")
  }
}

/**
 * The providers' libraries, loaded at the first delivery: together they are about a thousand modules, which every
 * start of the server and of the command line would otherwise load for nothing.
 */
let libraries: Promise<{ readonly stripe: typeof Stripe; readonly paddle: PaddleWebhooks }> | undefined
const loadLibraries = () =>
  libraries ??= Promise.all([import("stripe"), import("@paddle/paddle-node-sdk")]).then(([stripe, paddleSdk]) => {
    // the Paddle SDK computes its HMAC through the runtime it is told about
    paddleSdk.NodeRuntime.initialize()
    return { stripe: stripe.default, paddle: new paddleSdk.Webhooks() }
  })

/** Checks a delivery of `provider` signed with `secret`; answers its parsed body. */
export const verify: Record<
  Model.BillingProvider,
  (body: string, headers: Headers, secret: string) => Effect.Effect<VerifiedBody, Errors.BillingSignatureInvalid>
> = {
  stripe: (body, headers, secret) => {
    const header = headers["stripe-signature"]
    if (header === undefined) return invalid("no Stripe-Signature header")
    return Effect.tryPromise({
      try: () => loadLibraries().then(({ stripe }) => stripe.webhooks.constructEvent(body, header, secret, stripeToleranceSeconds)),
      catch: (error) => Errors.billingSignatureInvalid(error instanceof Error ? error.message.split("\n")[0]!.replace(/\.$/, "") : "Stripe refused it")
    }).pipe(Effect.flatMap(() => parsed(body)))
  },
  paddle: (body, headers, secret) => {
    const header = headers["paddle-signature"]
    if (header === undefined) return invalid("no Paddle-Signature header")
    return Effect.tryPromise({
      try: () => loadLibraries().then(({ paddle }) => paddle.isSignatureValid(body, secret, header)),
      catch: () => Errors.billingSignatureInvalid("a malformed Paddle-Signature header")
    }).pipe(Effect.flatMap((valid) => (valid ? parsed(body) : invalid("Paddle-Signature does not match the body, or is too old"))))
  },
  lemonsqueezy: (body, headers, secret) => {
    const header = headers["x-signature"]
    if (header === undefined) return invalid("no X-Signature header")
    const expected = createHmac("sha256", secret).update(body, "utf8").digest()
    const given = /^[0-9a-f]{64}$/i.test(header) ? Buffer.from(header, "hex") : undefined
    return given !== undefined && timingSafeEqual(given, expected) ? parsed(body) : invalid("X-Signature does not match the body")
  }
}
