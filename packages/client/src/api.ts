/**
 * The typed client of every lm/v1 route, for Effect users: `@lm/api`'s, derived from the one API definition, as a
 * service. The one file of the client that imports the API package: the rest takes its types from here.
 */
import { Context, type Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { type ConnectionOptions, type LmApiClient, makeApiClient } from "@lm/api"

export { type ConnectionOptions, type LmApiClient, makeApiClient, restBase } from "@lm/api"
export type { ActivatedMachine, CrlResponse, DeactivateResponse, HeartbeatResponse, PublicKeyResponse, ValidateResponse } from "@lm/api"

/** The envelope's `data` of a route's success. */
type DataOf<F> = F extends (...args: never) => Effect.Effect<infer A, infer _E, infer _R> ? A extends { readonly data: infer D } ? D : never : never

/** The answer of `GET /updates/check`. */
export type UpdateCheckResponse = DataOf<LmApiClient["updates"]["check"]>

/** A release as the server describes it (`id`, `version`, `channel`, `filename`, `size`, `sha256`, ...). */
export type Release = NonNullable<UpdateCheckResponse["release"]>

/** The typed client as a service; `LmApi.layer(options)` builds it on `fetch`. */
export class LmApi extends Context.Service<LmApi, LmApiClient>()("@lm/client/LmApi") {
  static readonly layer = (options: ConnectionOptions): Layer.Layer<LmApi> =>
    Layer.effect(LmApi, makeApiClient(options)).pipe(Layer.provide(FetchHttpClient.layer))
}
