/**
 * The WPLM compatibility namespace on the Effect HTTP stack (CONTRACT §17, `LM_WPLM_COMPAT=1`): the public client
 * routes at `{rest_root}/wplm/v1/`, answered by the client pipeline on the namespace's answers
 * (`handlers/WplmAnswers.ts`). A write's body is decoded by its lm/v1 endpoint's payload schema with the fast
 * path's `decodeBody`, so both transports refuse a bad body alike (an empty body is `{}`). Off, the paths are
 * unknown (404 `rest_no_route`).
 */
import { Effect, Layer, Result } from "effect"
import { HttpRouter } from "effect/http"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import { makeWplmAnswers, wplmRoutes } from "../handlers/WplmAnswers.js"
import { factsOfRequest, makeClientPipelineOf } from "./ClientPipeline.js"
import { foreignCharset, unsupportedCharset } from "./ErrorEnvelope.js"
import { decodeBody, routesOf } from "./FastPath.js"
import { HttpSettings } from "./Settings.js"

const header = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/** The namespace's routes when `HttpSettings.wplmCompat` is on; nothing otherwise. */
export const layerWplmRoutes = Layer.unwrap(Effect.gen(function*() {
  const { trustProxyHops, wplmCompat } = yield* HttpSettings
  if (!wplmCompat) return Layer.empty
  const pipeline = yield* makeClientPipelineOf(makeWplmAnswers)
  const writes = [...routesOf().values()].map((route) =>
    HttpRouter.route("POST", wplmRoutes[route.name], (request: HttpServerRequest) =>
      Effect.gen(function*() {
        const charset = foreignCharset(header(request.headers["content-type"]))
        if (charset !== undefined) return unsupportedCharset(charset)
        const text = yield* request.text
        const payload = decodeBody(route, text.trim() === "" ? "{}" : text)
        if (Result.isFailure(payload)) return payload.failure
        return yield* pipeline(route.name, payload.success as never, factsOfRequest(request, trustProxyHops))
      }))
  )
  return HttpRouter.addAll([
    ...writes,
    HttpRouter.route("GET", wplmRoutes.crl, (request: HttpServerRequest) =>
      pipeline("crl", { "if-none-match": header(request.headers["if-none-match"]) }, factsOfRequest(request, trustProxyHops))),
    HttpRouter.route("GET", wplmRoutes.publicKey, (request: HttpServerRequest) =>
      pipeline("publicKey", undefined, factsOfRequest(request, trustProxyHops)))
  ])
}))
