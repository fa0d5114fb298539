/**
 * The one pipeline of the public client routes (`client` group: validate, activate, deactivate, heartbeat,
 * crl, public-key; CONTRACT §4, §5); its guards also run before the update routes' domain calls
 * (`handlers/Releases.ts`, {@link makePublicGuard}). Both ways a request arrives run it: the group's HttpApi handlers
 * (`handlers/Client.ts`) and the fast path in front of the Effect stack (`FastPath.ts`). The transport decodes
 * the endpoint's input with the endpoint's own schema and states the request's facts (its client IP by the
 * contract's rule, `ClientIp.ts`, read once; its headers); the pipeline then runs, in order:
 * 1. the public guards ({@link ClientGuards}: none by default; a rate limiter or an embedder adds them), each of
 *    which may refuse with an envelope error (a 429, ...);
 * 2. the domain call and its answer (`handlers/ClientAnswers.ts`; the blacklist and the event log are the
 *    domain's, inside that call);
 * 3. a refusal (an envelope error, or the domain's error mapped by `ApiErrors.fromDomain`) written as the
 *    envelope (`errorResponse`), so that both transports answer it alike.
 * Defects pass through: each transport answers them 500 with the request id (`Routing.internalError`).
 */
import type { IncomingMessage } from "node:http"
import { Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import type { ApiErrors } from "@lm/api"
import { clientIp, clientIpFrom } from "./ClientIp.js"
import { type ClientAnswers, makeClientAnswers, makeValidateNow, type ValidateNow } from "../handlers/ClientAnswers.js"
import { errorResponse } from "./Responses.js"

/** The public client endpoints, by their name in the `client` group. */
export type ClientEndpoint = keyof ClientAnswers

/** What each endpoint takes, decoded by its schema: the payload of a write, the headers of `crl`. */
export type ClientInput<E extends ClientEndpoint> = Parameters<ClientAnswers[E]>[0]

/** What the transport knows of a request, worked out once. */
export interface ClientRequestFacts {
  /** The client's address (socket, or `X-Forwarded-For` behind a trusted proxy); undefined on a unix socket. */
  readonly clientIp: string | undefined
  /** The request headers as received (lower-case names). */
  readonly headers: { readonly [name: string]: string | ReadonlyArray<string> | undefined }
}

/**
 * Every public route a guard may see: the client endpoints, and the update routes (`updates/check`,
 * `updates/download`), whose handlers run the same guards ({@link makePublicGuard}) before their domain call.
 */
export type PublicEndpoint = ClientEndpoint | "update-check" | "download"

/** What a public guard sees of a request. */
export interface ClientGuardRequest extends ClientRequestFacts {
  readonly endpoint: PublicEndpoint
  /** The license key the body names, as decoded (the writes); undefined for `crl` and `public-key`. */
  readonly licenseKey: string | undefined
}

/** A public guard: succeeds to let the request through, fails with the envelope (or domain) error to answer instead. */
export interface ClientGuard {
  (request: ClientGuardRequest): Effect.Effect<void, ApiErrors.AnyError>
  /**
   * The guard at once, for a synchronous transport (the fast path's validate): true lets the request through;
   * false, having done nothing, sends it the effectful way, where the guard itself runs (and refuses). A guard
   * without it keeps every request on the effectful way.
   */
  readonly now?: ((request: ClientGuardRequest) => boolean) | undefined
}

/** The public guards, run in order before every client route's domain call; none unless provided. */
export const ClientGuards = Context.Reference<{ readonly guards: ReadonlyArray<ClientGuard> }>("lm/http/ClientGuards", {
  defaultValue: () => ({ guards: [] })
})

/** Exactly these public guards, on both transports. */
export const layerClientGuards = (guards: ReadonlyArray<ClientGuard>): Layer.Layer<never> =>
  Layer.succeed(ClientGuards, { guards })

/** The facts of an HttpApi request (`LM_TRUST_PROXY` is `trustProxyHops`). */
export const factsOfRequest = (request: HttpServerRequest, trustProxyHops: number): ClientRequestFacts => ({
  clientIp: clientIp(request, trustProxyHops),
  headers: request.headers
})

/** The facts of a Node request, as the fast path takes it (same rule as {@link factsOfRequest}). */
export const factsOfNodeRequest = (request: IncomingMessage, trustProxyHops: number): ClientRequestFacts => {
  const forwardedFor = request.headers["x-forwarded-for"]
  return {
    clientIp: clientIpFrom(request.socket.remoteAddress, typeof forwardedFor === "string" ? forwardedFor : undefined, trustProxyHops),
    headers: request.headers
  }
}

const licenseKeyOf = (input: unknown): string | undefined => {
  if (typeof input !== "object" || input === null || !("license_key" in input)) return undefined
  return typeof input.license_key === "string" ? input.license_key : undefined
}

/** Runs a client endpoint: guards, domain call, answer; a refusal is answered with its envelope. */
export interface ClientPipeline {
  <E extends ClientEndpoint>(endpoint: E, input: ClientInput<E>, facts: ClientRequestFacts): Effect.Effect<HttpServerResponse.HttpServerResponse>
  /**
   * Validate at once, on the caller's stack, with the services of `context`: the response when every guard and
   * the answer could give it synchronously (`ClientGuard.now`, `ValidateNow`), else the effect that finishes the
   * request from where it stopped (the guards not yet passed, the domain call, the refusal's envelope) and
   * answers exactly as the pipeline would. Undefined when this pipeline has no synchronous lane.
   */
  readonly validateNow?: (
    input: ClientInput<"validate">,
    facts: ClientRequestFacts,
    context: Context.Context<never>
  ) => HttpServerResponse.HttpServerResponse | Effect.Effect<HttpServerResponse.HttpServerResponse>
}

/**
 * The provided {@link ClientGuards} as one check, run in order: succeeds to let the request through, fails with the
 * first refusal's envelope error. Undefined when there are none (nothing runs per request then).
 */
export const makePublicGuard: Effect.Effect<((request: ClientGuardRequest) => Effect.Effect<void, ApiErrors.AnyError>) | undefined> = Effect.gen(
  function*() {
    const { guards } = yield* ClientGuards
    if (guards.length === 0) return undefined
    return (request: ClientGuardRequest) => Effect.forEach(guards, (guard) => guard(request), { discard: true })
  }
)

/**
 * The pipeline of a set of answers (lm/v1's, or the WPLM namespace's: `handlers/WplmAnswers.ts`) with the provided
 * {@link ClientGuards}.
 */
export const makeClientPipelineOf = <R, R2 = never>(
  makeAnswers: Effect.Effect<ClientAnswers, never, R>,
  makeValidateNow?: Effect.Effect<ValidateNow, never, R2>
): Effect.Effect<ClientPipeline, never, R | R2> =>
  Effect.gen(function*() {
    const answers = yield* makeAnswers
    const { guards } = yield* ClientGuards
    const guard = yield* makePublicGuard
    const answer = <E extends ClientEndpoint>(endpoint: E, input: ClientInput<E>, facts: ClientRequestFacts) =>
      (answers[endpoint] as (input: ClientInput<E>, ipAddress: string | null) => Effect.Effect<HttpServerResponse.HttpServerResponse, ApiErrors.AnyError>)(
        input,
        facts.clientIp ?? null
      )
    // Without guards (the default) nothing is built per request for them.
    const guarded = guard === undefined ? answer : <E extends ClientEndpoint>(endpoint: E, input: ClientInput<E>, facts: ClientRequestFacts) =>
      Effect.andThen(
        guard({ ...facts, endpoint, licenseKey: licenseKeyOf(input) }),
        Effect.suspend(() => answer(endpoint, input, facts))
      )
    const answered = (effect: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiErrors.AnyError>) =>
      Effect.catch(effect, (error) => Effect.succeed(errorResponse(error)))
    const pipeline: ClientPipeline = (endpoint, input, facts) => answered(guarded(endpoint, input, facts))

    const answerNow = makeValidateNow === undefined ? undefined : yield* makeValidateNow
    if (answerNow === undefined || !guards.every((g) => g.now !== undefined)) return pipeline
    const validateNow: NonNullable<ClientPipeline["validateNow"]> = (input, facts, context) => {
      if (guards.length > 0) {
        const request: ClientGuardRequest = { ...facts, endpoint: "validate", licenseKey: licenseKeyOf(input) }
        for (let i = 0; i < guards.length; i++) {
          if (!guards[i]!.now!(request)) {
            // This guard refuses (or cannot say at once): it and the rest run, then the answer, as `guarded` does.
            const rest = guards.slice(i)
            return answered(Effect.andThen(
              Effect.forEach(rest, (g) => g(request), { discard: true }),
              Effect.suspend(() => answer("validate", input, facts))
            ))
          }
        }
      }
      return answerNow(input, facts.clientIp ?? null, context) ?? answered(Effect.suspend(() => answer("validate", input, facts)))
    }
    return Object.assign(pipeline, { validateNow })
  })

/** The lm/v1 pipeline on the engine's services and the provided {@link ClientGuards}. */
export const makeClientPipeline: Effect.Effect<ClientPipeline, never, Effect.Services<typeof makeClientAnswers>> = makeClientPipelineOf(
  makeClientAnswers,
  makeValidateNow
)
