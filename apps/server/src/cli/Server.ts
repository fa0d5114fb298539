/**
 * The commands that work against a running server: `LM_URL` (its base URL; `LM_REST_ROOT` when it is not `/api`)
 * and an API key (`LM_CONSUMER_KEY`, `LM_CONSUMER_SECRET`), through the typed client derived from the API
 * definition (`@lm/api`). A refusal is {@link Refused}: the contract's code and message, one line on stderr, exit 1.
 */
import { Config, Data, Effect, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { type LmApiClient, makeApiClient } from "@lm/api"

/** A refusal: the server's (its contract code) or the command's own (`usage` for missing settings). */
export class Refused extends Data.TaggedError("Refused")<{ readonly code: string; readonly message: string }> {}

/** A setting this mode needs is missing: a usage error (exit 2). */
export class MissingSetting extends Data.TaggedError("MissingSetting")<{ readonly message: string }> {}

/** Where the server is and the key to call it with, from the environment. */
export const connection = Effect.gen(function*() {
  const url = yield* Config.option(Config.String("LM_URL"))
  if (Option.isNone(url) || url.value === "") {
    return yield* new MissingSetting({
      message: "LM_URL is not set: this command talks to a running server (LM_URL=http://host:port, LM_CONSUMER_KEY, LM_CONSUMER_SECRET)"
    })
  }
  const restRoot = yield* Config.String("LM_REST_ROOT").pipe(Config.withDefault("/api"))
  const consumerKey = yield* Config.String("LM_CONSUMER_KEY").pipe(Config.withDefault(""))
  const consumerSecret = yield* Config.String("LM_CONSUMER_SECRET").pipe(Config.withDefault(""))
  return { baseUrl: url.value, restRoot, credentials: { consumerKey, consumerSecret } }
}).pipe(Effect.catchTag("ConfigError", (e) => Effect.fail(new MissingSetting({ message: e.message }))))

/** What a failed call says: the envelope's code and message, or why the server could not be reached. */
const refusalOf = (error: unknown): Refused => {
  const e = error as { readonly code?: unknown; readonly message?: unknown; readonly _tag?: unknown; readonly reason?: unknown }
  if (typeof e?.code === "string" && typeof e.message === "string") return new Refused({ code: e.code, message: e.message })
  if (e?._tag === "HttpClientError") return new Refused({ code: "unreachable", message: `cannot reach the server at LM_URL: ${String(e.message ?? e.reason)}` })
  return new Refused({ code: "bad_answer", message: `unexpected answer from the server: ${String(e?.message ?? error)}` })
}

/** Runs `f` on the typed client of the server in `LM_URL`; its failures become {@link Refused}. */
export const onServer = <A, E>(f: (api: LmApiClient) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const options = yield* connection
    const api = yield* makeApiClient(options)
    return yield* Effect.mapError(f(api), refusalOf)
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** Whether `LM_URL` is set (commands that also work on the store, such as `api-keys`, choose by it). */
export const serverGiven = Effect.map(Config.option(Config.String("LM_URL")), (url) => Option.isSome(url) && url.value !== "").pipe(
  Effect.orElseSucceed(() => false)
)
