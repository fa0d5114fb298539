/**
 * The metrics listener's HTTP side (CONTRACT §18): the routes `/metrics`, `/health/live`, `/health/ready` over a
 * set of {@link Probes}, and the asking and answering of probes over a message channel, by which the listener's
 * holder (the metrics thread of a lone server, the primary of `LM_WORKERS`) asks the process or thread that owns the
 * metric registry and the store. It imports nothing of the engine, so that the metrics thread loads only effect's
 * HTTP server.
 */
import { createServer } from "node:http"
// The module itself, not the package index: that loads every module, NodeRedis (and node-redis) among them.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { MetricsListen } from "./settings/Metrics.js"

/** A probe's answer: its status and JSON body. */
export interface ProbeStatus {
  readonly status: 200 | 503
  readonly body: { readonly status: string }
}

/**
 * What the metrics listener answers, as effects: the Prometheus text (undefined when its owner did not answer:
 * 503), liveness and readiness.
 */
export interface Probes {
  readonly metrics: Effect.Effect<string | undefined>
  readonly live: Effect.Effect<ProbeStatus>
  readonly ready: Effect.Effect<ProbeStatus>
}

/** The Prometheus text format's content type. */
export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

const json = ({ body, status }: ProbeStatus) => HttpServerResponse.jsonUnsafe(body, { status })

/** The answer of a live process. */
export const alive: ProbeStatus = { status: 200, body: { status: "live" } }

/** The answer for a process or thread that did not answer a probe in time. */
export const unresponsive: ProbeStatus = { status: 503, body: { status: "unresponsive" } }

/** The routes of a metrics listener on `probes`: `/metrics`, `/health/live`, `/health/ready`. */
export const layerProbeRoutes = <E, R>(probes: Effect.Effect<Probes, E, R>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const router = yield* HttpRouter.HttpRouter
    const { live, metrics, ready } = yield* probes
    yield* router.add(
      "GET",
      "/metrics",
      Effect.map(metrics, (text) =>
        text === undefined ? json(unresponsive) : HttpServerResponse.text(text, { contentType: prometheusContentType }))
    )
    yield* router.add("GET", "/health/live", Effect.map(live, json))
    yield* router.add("GET", "/health/ready", Effect.map(ready, json))
  }))

/** An HTTP server on `listen` serving `probes` (fails with effect's `ServeError` when it cannot listen). */
export const layerProbeServer = <E, R>(listen: MetricsListen, probes: Effect.Effect<Probes, E, R>) =>
  HttpRouter.serve(layerProbeRoutes(probes), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { host: listen.host, port: listen.port }))
  )

/** A question to the owner of the probes over a message channel, and its answer. */
export type ProbeRequest = { readonly lm: "probe"; readonly id: number; readonly probe: keyof Probes }
export type ProbeAnswer =
  | { readonly lm: "probe"; readonly id: number; readonly metrics: string }
  | { readonly lm: "probe"; readonly id: number; readonly status: ProbeStatus }

/** A message channel: a cluster worker (seen from the primary), a worker thread's port, the IPC channel. */
export interface ProbeChannel {
  readonly send: (message: ProbeRequest | ProbeAnswer) => void
  readonly on: (listener: (message: unknown) => void) => void
  readonly off: (listener: (message: unknown) => void) => void
}

/** The channel of `emitter`'s `message` events, sending with `send`. */
export const channelOver = (
  emitter: { on(event: "message", listener: (message: unknown) => void): unknown; off(event: "message", listener: (message: unknown) => void): unknown },
  send: ProbeChannel["send"]
): ProbeChannel => ({
  send,
  on: (listener) => emitter.on("message", listener),
  off: (listener) => emitter.off("message", listener)
})

const isProbeMessage = (message: unknown): message is { readonly lm: "probe"; readonly id: number } =>
  typeof message === "object" && message !== null && (message as ProbeRequest).lm === "probe" &&
  typeof (message as ProbeRequest).id === "number"

let nextProbe = 0

/**
 * How long the listener's holder waits for a probe's answer (the main thread's, or a worker's): longer, and the
 * owner is not answering.
 */
export const probeAnswerMillis = 3000

/** Asks one probe over `channel`; undefined when no answer comes within `timeoutMillis`. */
export const ask = (channel: ProbeChannel, probe: ProbeRequest["probe"], timeoutMillis = probeAnswerMillis) =>
  Effect.callback<ProbeAnswer | undefined>((resume) => {
    const id = ++nextProbe
    const done = (answer: ProbeAnswer | undefined) => {
      clearTimeout(timer)
      channel.off(onMessage)
      resume(Effect.succeed(answer))
    }
    const onMessage = (message: unknown) => {
      if (isProbeMessage(message) && message.id === id && !("probe" in message)) done(message as ProbeAnswer)
    }
    const timer = setTimeout(() => done(undefined), timeoutMillis)
    channel.on(onMessage)
    try {
      channel.send({ lm: "probe", id, probe })
    } catch {
      done(undefined)
    }
  })

/** The probe status of an answer, or `otherwise` when there was none. */
export const statusOf = (answer: ProbeAnswer | undefined, otherwise: ProbeStatus): ProbeStatus =>
  answer !== undefined && "status" in answer ? answer.status : otherwise

/**
 * Answers every probe asked over `channel` with `probes`, run by `run`, until the returned function is called.
 */
export const answerProbes = (
  channel: ProbeChannel,
  probes: Probes,
  run: <A>(effect: Effect.Effect<A>) => Promise<A>
): () => void => {
  const onMessage = (message: unknown) => {
    if (!isProbeMessage(message) || !("probe" in message)) return
    const { id, probe } = message as ProbeRequest
    const answer: Promise<ProbeAnswer> = probe === "metrics"
      ? run(probes.metrics).then((metrics) => ({ lm: "probe", id, metrics: metrics ?? "" }))
      : run(probes[probe]).then((status) => ({ lm: "probe", id, status }))
    void answer.then((reply) => {
      try {
        channel.send(reply)
      } catch {
        // The asker is gone (the channel closed): nobody waits for the answer.
      }
    })
  }
  channel.on(onMessage)
  return () => channel.off(onMessage)
}
