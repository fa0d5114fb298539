/**
 * Handlers of the public `client` group (CONTRACT §4, §5). Each one hands the endpoint's decoded input and the
 * request's facts (client address from the socket, or `X-Forwarded-For` behind a trusted proxy; headers) to the
 * client pipeline (`ClientPipeline.ts`: public guards, the domain call, the answer), which the fast path
 * (`FastPath.ts`) runs too; nothing else happens here.
 */
import { Effect } from "effect"
import { Api } from "@lm/api"
import { factsOfRequest, makeClientPipeline } from "../server/ClientPipeline.js"
import { HttpSettings } from "../server/Settings.js"
import { group } from "./Group.js"

/** The `client` group's handlers. */
export const ClientHandlers = group(
  Api,
  "client",
  Effect.fn(function*(handlers) {
    const run = yield* makeClientPipeline
    const { trustProxyHops } = yield* HttpSettings

    return handlers
      .handle("validate", ({ payload, request }) => run("validate", payload, factsOfRequest(request, trustProxyHops)))
      .handle("activate", ({ payload, request }) => run("activate", payload, factsOfRequest(request, trustProxyHops)))
      .handle("deactivate", ({ payload, request }) => run("deactivate", payload, factsOfRequest(request, trustProxyHops)))
      .handle("heartbeat", ({ payload, request }) => run("heartbeat", payload, factsOfRequest(request, trustProxyHops)))
      .handle("crl", ({ headers, request }) => run("crl", headers, factsOfRequest(request, trustProxyHops)))
      .handle("publicKey", ({ request }) => run("publicKey", undefined, factsOfRequest(request, trustProxyHops)))
      .handle("publicKeyAlias", ({ request }) => run("publicKeyAlias", undefined, factsOfRequest(request, trustProxyHops)))
  })
)
