/**
 * The signature of a billing provider's webhook delivery, checked on the raw body as each provider documents,
 * with its official library where it has one (CONTRACT §20):
 * - Stripe: `Stripe-Signature` (`t=…,v1=…`), `stripe`'s `webhooks.constructEvent` with a 300 s tolerance;
 * - Paddle Billing: `Paddle-Signature` (`ts=…;h1=…`), `@paddle/paddle-node-sdk`'s webhook verification;
 * - Lemon Squeezy (no library): `X-Signature`, the hex HMAC-SHA256 of the body with the signing secret.
 * Each answers the parsed body, or `billing_signature_invalid`.
 * The two libraries (about a thousand modules together) are loaded only for a provider whose secret is set
 * (`preload`, when the server starts), not by every start of the server or of any `lm` command.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"
import { Errors, type Model } from "@lm/domain"

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

/** `fn` run once, on first call; its promise kept. */
const once = <A>(fn: () => Promise<A>): () => Promise<A> => {
  let loaded: Promise<A> | undefined
  return () => (loaded ??= fn())
}

const stripe = once(() => import("stripe").then((module) => module.default))

const paddle = once(() =>
  import("@paddle/paddle-node-sdk").then(({ NodeRuntime, Webhooks }) => {
    // the Paddle SDK computes its HMAC through the runtime it is told about
    NodeRuntime.initialize()
    return new Webhooks()
  })
)

/**
 * Loads the library that checks `provider`'s signatures, once: at start, so that a signature's age is not
 * spent loading it on the first delivery (Paddle's tolerance is seconds).
 */
export const preload = (provider: Model.BillingProvider): Effect.Effect<void> =>
  provider === "stripe" ? Effect.promise(stripe) : provider === "paddle" ? Effect.promise(paddle) : Effect.void

/** Checks a delivery of `provider` signed with `secret`; answers its parsed body. */
export const verify: Record<
  Model.BillingProvider,
  (body: string, headers: Headers, secret: string) => Effect.Effect<VerifiedBody, Errors.BillingSignatureInvalid>
> = {
  stripe: (body, headers, secret) => {
    const header = headers["stripe-signature"]
    if (header === undefined) return invalid("no Stripe-Signature header")
    return Effect.promise(stripe).pipe(
      Effect.flatMap((Stripe) =>
        Effect.try({
          try: () => Stripe.webhooks.constructEvent(body, header, secret, stripeToleranceSeconds),
          catch: (error) => Errors.billingSignatureInvalid(error instanceof Error ? error.message.split("\n")[0]!.replace(/\.$/, "") : "Stripe refused it")
        })
      ),
      Effect.flatMap(() => parsed(body))
    )
  },
  paddle: (body, headers, secret) => {
    const header = headers["paddle-signature"]
    if (header === undefined) return invalid("no Paddle-Signature header")
    return Effect.promise(paddle).pipe(Effect.flatMap((webhooks) => Effect.tryPromise({
      try: () => webhooks.isSignatureValid(body, secret, header),
      catch: () => Errors.billingSignatureInvalid("a malformed Paddle-Signature header")
    }))).pipe(Effect.flatMap((valid) => (valid ? parsed(body) : invalid("Paddle-Signature does not match the body, or is too old"))))
  },
  lemonsqueezy: (body, headers, secret) => {
    const header = headers["x-signature"]
    if (header === undefined) return invalid("no X-Signature header")
    const expected = createHmac("sha256", secret).update(body, "utf8").digest()
    const given = /^[0-9a-f]{64}$/i.test(header) ? Buffer.from(header, "hex") : undefined
    return given !== undefined && timingSafeEqual(given, expected) ? parsed(body) : invalid("X-Signature does not match the body")
  }
}
