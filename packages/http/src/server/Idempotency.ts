/**
 * The implementation of the {@link Idempotency} middleware (CONTRACT §16): a management POST with an
 * `Idempotency-Key` runs through the domain's `Idempotency.run` (which keeps its first answer for 24 h in the store,
 * per API key) with a digest of its method, path and body; a repeat gets that answer again with
 * `Idempotent-Replayed: true`. Requests without the header, other methods and streamed bodies (the release
 * upload, which is not read up front) pass untouched.
 */
import { createHash } from "node:crypto"
import { Idempotency as DomainIdempotency, type Model } from "@lm/domain"
import { Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import { ApiErrors, CurrentApiKey, Idempotency, StreamedBody } from "@lm/api"
import { answerOf } from "./ErrorEnvelope.js"

/** The header a replayed answer carries. */
export const replayedHeader = "idempotent-replayed"

/** The digest a repeat must match: method, path with query, and body. */
const requestHash = (method: string, url: string, body: string): string =>
  createHash("sha256").update(`${method} ${url}\n`).update(body).digest("hex")

/** An answer that cannot be kept (its body is not in memory): it is sent, and its key released. */
class NotKept {
  // A plain field, not a parameter property: the tests run these sources on Node's type stripping, which has none.
  readonly response: HttpServerResponse.HttpServerResponse
  constructor(response: HttpServerResponse.HttpServerResponse) {
    this.response = response
  }
}

const decoder = new TextDecoder()

/** The answer as the store keeps it, or {@link NotKept}. */
const kept = (response: HttpServerResponse.HttpServerResponse): Effect.Effect<Model.IdempotentAnswer, NotKept> => {
  const body = response.body
  if (body._tag === "Uint8Array") {
    return Effect.succeed({ status: response.status, contentType: body.contentType, body: decoder.decode(body.body) })
  }
  if (body._tag === "Empty") return Effect.succeed({ status: response.status, contentType: "application/json", body: "" })
  return Effect.fail(new NotKept(response))
}

/** The layer implementing {@link Idempotency}; needs the domain's `Idempotency`. */
export const IdempotencyLive: Layer.Layer<Idempotency, never, DomainIdempotency> = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const idempotency = yield* DomainIdempotency
    return Idempotency.of((httpEffect, { endpoint }) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest)
        const key = request.headers["idempotency-key"]
        if (request.method !== "POST" || key === undefined || Context.get(endpoint.annotations, StreamedBody)) {
          return httpEffect
        }
        return Effect.gen(function*() {
          const apiKey = yield* CurrentApiKey
          const body = yield* Effect.orElseSucceed(request.text, () => "")
          let first: HttpServerResponse.HttpServerResponse | undefined
          const answer = Effect.flatMap(answerOf(httpEffect, request), (response) => {
            first = response
            return kept(response)
          })
          const result = yield* idempotency.run({ apiKeyId: apiKey.id, key, requestHash: requestHash(request.method, request.url, body) }, answer)
          if (!result.replayed && first !== undefined) return first
          const { status, contentType, body: text } = result.answer
          return HttpServerResponse.text(text, { status, contentType, headers: { [replayedHeader]: "true" } })
        }).pipe(
          Effect.catch((error: unknown) => {
            if (error instanceof NotKept) return Effect.succeed(error.response)
            if (ApiErrors.isDomainErrorLike(error)) return Effect.fail(ApiErrors.fromDomain(error))
            return Effect.fail(error)
          })
        ) as ReturnType<Idempotency["Service"]>
      })
    )
  })
)
