/**
 * Probes asked over a message channel (`ProbeListener.ts`): how the metrics thread of a lone server asks the main
 * thread, and the primary of `LM_WORKERS` each worker. A real `MessageChannel` between the two sides.
 */
import { MessageChannel, type MessagePort } from "node:worker_threads"
import { Effect } from "effect"
import { afterEach, expect, it } from "vitest"
import { alive, answerProbes, ask, channelOver, type Probes, statusOf, unresponsive } from "../src/ProbeListener.js"

const open: Array<MessagePort> = []
afterEach(() => {
  for (const port of open.splice(0)) port.close()
})

const channelOf = (port: MessagePort) => channelOver(port, (message) => port.postMessage(message))

const pair = () => {
  const { port1, port2 } = new MessageChannel()
  open.push(port1, port2)
  return { asker: channelOf(port1), owner: channelOf(port2) }
}

const probes: Probes = {
  metrics: Effect.succeed("lm_up 1\n"),
  live: Effect.succeed(alive),
  ready: Effect.succeed({ status: 503, body: { status: "draining" } })
}

it("each probe asked is answered by the owner's probes, concurrent questions each with its own answer", async () => {
  const { asker, owner } = pair()
  answerProbes(owner, probes, Effect.runPromise)
  const [metrics, live, ready] = await Effect.runPromise(
    Effect.all([ask(asker, "metrics", 2000), ask(asker, "live", 2000), ask(asker, "ready", 2000)], { concurrency: "unbounded" })
  )
  expect(metrics && "metrics" in metrics ? metrics.metrics : undefined).toBe("lm_up 1\n")
  expect(statusOf(live, unresponsive)).toEqual(alive)
  expect(statusOf(ready, unresponsive)).toEqual({ status: 503, body: { status: "draining" } })
})

it("an owner that does not answer in time leaves the probe unanswered: unresponsive", async () => {
  const { asker } = pair()
  const answer = await Effect.runPromise(ask(asker, "live", 50))
  expect(answer).toBeUndefined()
  expect(statusOf(answer, unresponsive)).toEqual({ status: 503, body: { status: "unresponsive" } })
})

it("an owner that stopped answering no longer answers", async () => {
  const { asker, owner } = pair()
  const stop = answerProbes(owner, probes, Effect.runPromise)
  expect(await Effect.runPromise(ask(asker, "live", 2000))).toBeDefined()
  stop()
  expect(await Effect.runPromise(ask(asker, "live", 50))).toBeUndefined()
})
