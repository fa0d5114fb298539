/**
 * `LM_WORKERS=N` (N > 1, PostgreSQL only: `settings/Workers.ts`): `lm serve` becomes the primary of a node:cluster
 * of N server processes ("workers") on one port. The primary opens no store and serves no request: node:cluster
 * holds the listening socket in it and hands each new connection to the workers in turn (round robin).
 *
 * - Start: worker 1 starts alone, so that the store's migrations and the bootstrap key are done once, by one
 *   process (the key printed once); the others start once it listens, and find both done. A worker that exits
 *   before listening (a refused setting: it printed its one line) stops the others, and the start is refused.
 * - A worker that dies later is replaced in its slot (logged), after a second.
 * - SIGTERM or SIGINT: every worker gets SIGTERM and drains as a lone server does; the primary exits 0 once all
 *   have exited.
 * - `LM_METRICS_PORT`: one listener, the primary's (workers open none, so the port is bound once). `/metrics` asks
 *   every worker over the IPC channel and lists each one's series with a label `worker="i"` (its slot): counters
 *   and histograms add up across workers in a query (`sum without (worker)`), while the process gauges (memory,
 *   event-loop delay) stay each process's own, which a sum or a max across processes would make meaningless.
 *   `/health/ready` is 200 when every worker is ready, 503 while draining or when one is not.
 */
import cluster, { type Worker } from "node:cluster"
import { Effect, Layer } from "effect"
import { StartRefused } from "./Main.js"
import { layerListener } from "./MetricsListener.js"
import { alive, ask, channelOver, type Probes } from "./ProbeListener.js"
import type { MetricsListen } from "./settings/Metrics.js"

/** The cluster as the primary sees it: each slot's current worker, and whether it is stopping. */
interface State {
  readonly slots: Array<Worker | undefined>
  stopping: boolean
}

/** Forks the worker of `slot` (1-based); resolves once it listens, fails if it exits first. */
const forkSlot = (state: State, slot: number) =>
  Effect.callback<Worker, StartRefused>((resume) => {
    const worker = cluster.fork({ LM_WORKER_SLOT: String(slot) })
    state.slots[slot - 1] = worker
    const onListening = () => {
      worker.off("exit", onExit)
      resume(Effect.succeed(worker))
    }
    const onExit = (code: number | null, signal: string | null) => {
      worker.off("listening", onListening)
      resume(Effect.fail(new StartRefused({ message: `worker ${slot} exited (${code ?? signal}) before listening` })))
    }
    worker.once("listening", onListening)
    worker.once("exit", onExit)
  })

/** Resolves once `worker` has exited. */
const exited = (worker: Worker) =>
  Effect.callback<void>((resume) => {
    if (worker.isDead()) return resume(Effect.void)
    worker.once("exit", () => resume(Effect.void))
  })

/** SIGTERM to every live worker, then waits until each has exited. */
const stopAll = (state: State) =>
  Effect.suspend(() => {
    state.stopping = true
    const live = state.slots.filter((w): w is Worker => w !== undefined && !w.isDead())
    for (const worker of live) worker.process.kill("SIGTERM")
    return Effect.forEach(live, exited, { concurrency: "unbounded", discard: true })
  })

/** The primary's side of the IPC channel with `worker`. */
const channelOf = (worker: Worker) => channelOver(worker, (message) => worker.send(message))

/**
 * The Prometheus text of several processes as one exposition: each family's `# HELP` and `# TYPE` once, then its
 * samples from every process, each with the label `worker="{slot}"` added. (The format wants a family's samples
 * together, so the texts cannot simply be concatenated.)
 */
export const mergeExpositions = (texts: ReadonlyArray<{ readonly slot: number; readonly text: string }>): string => {
  const families = new Map<string, { comments: Array<string>; samples: Array<string> }>()
  const family = (name: string) => {
    let entry = families.get(name)
    if (entry === undefined) families.set(name, entry = { comments: [], samples: [] })
    return entry
  }
  for (const { slot, text } of texts) {
    let current = ""
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue
      const comment = /^# (HELP|TYPE) (\S+)/.exec(line)
      if (comment !== null) {
        current = comment[2]!
        const entry = family(current)
        if (!entry.comments.some((c) => c.startsWith(`# ${comment[1]} `))) entry.comments.push(line)
        continue
      }
      if (line.startsWith("#")) continue
      const sample = /^([^\s{]+)(?:\{(.*)\})?\s+(.+)$/.exec(line)
      if (sample === null) continue
      const labels = sample[2] === undefined || sample[2] === "" ? `worker="${slot}"` : `worker="${slot}",${sample[2]}`
      family(current === "" ? sample[1]! : current).samples.push(`${sample[1]}{${labels}} ${sample[3]}`)
    }
  }
  return [...families.values()].flatMap((f) => [...f.comments, ...f.samples]).join("\n") + "\n"
}

/** The primary's probes: each worker's, asked over IPC. */
const clusterProbes = (state: State): Probes => {
  const running = () =>
    state.slots.flatMap((worker, i) => worker === undefined || worker.isDead() ? [] : [{ slot: i + 1, worker }])
  return {
    metrics: Effect.suspend(() =>
      Effect.forEach(running(), ({ slot, worker }) => Effect.map(ask(channelOf(worker), "metrics"), (answer) => ({ slot, answer })), {
        concurrency: "unbounded"
      })
    ).pipe(Effect.map((answers) =>
      mergeExpositions(answers.flatMap(({ answer, slot }) => answer !== undefined && "metrics" in answer ? [{ slot, text: answer.metrics }] : []))
    )),
    // The primary answers while it runs: a worker that stops answering is replaced (or makes `ready` 503).
    live: Effect.succeed(alive),
    ready: Effect.suspend(() => {
      if (state.stopping) return Effect.succeed({ status: 503 as const, body: { status: "draining" } })
      const workers = running()
      if (workers.length < state.slots.length) return Effect.succeed({ status: 503 as const, body: { status: "worker_unavailable" } })
      return Effect.map(Effect.forEach(workers, ({ worker }) => ask(channelOf(worker), "ready"), { concurrency: "unbounded" }), (answers) => {
        for (const answer of answers) {
          if (answer === undefined || !("status" in answer)) return { status: 503 as const, body: { status: "worker_unavailable" } }
          if (answer.status.status !== 200) return answer.status
        }
        return { status: 200 as const, body: { status: "ready" } }
      })
    })
  }
}

/**
 * The primary of `count` workers, until interrupted (SIGTERM, SIGINT): then it stops every worker and waits for
 * them. Fails with {@link StartRefused} when a worker exits before listening (its refusal already said).
 */
export const runPrimary = (count: number, metrics: MetricsListen | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const state: State = { slots: Array.from({ length: count }, () => undefined), stopping: false }
    // The metrics listener opens first (a port it cannot take refuses the start before any worker runs) and
    // closes last, after every worker has drained.
    if (metrics !== undefined) yield* Layer.build(layerListener(metrics, Effect.succeed(clusterProbes(state))))
    yield* Effect.addFinalizer(() => stopAll(state))
    const first = yield* forkSlot(state, 1)
    const rest = yield* Effect.forEach(Array.from({ length: count - 1 }, (_, i) => i + 2), (slot) => forkSlot(state, slot), {
      concurrency: "unbounded"
    })
    const workers = [first, ...rest]
    yield* Effect.logInfo(`${count} workers listening (pids ${workers.map((w) => w.process.pid).join(", ")}), primary pid ${process.pid}`)
    // A worker that dies while the cluster runs is replaced in its slot.
    const context = yield* Effect.context<never>()
    cluster.on("exit", (worker, code, signal) => {
      if (state.stopping) return
      const slot = state.slots.indexOf(worker) + 1
      if (slot === 0) return
      Effect.runForkWith(context)(
        Effect.logWarning(`worker ${slot} (pid ${worker.process.pid}) exited (${code ?? signal}); starting another in a second`).pipe(
          Effect.andThen(Effect.sleep("1 second")),
          Effect.andThen(Effect.suspend(() => state.stopping ? Effect.void : Effect.asVoid(forkSlot(state, slot)))),
          Effect.catch((error) => Effect.logError(`worker ${slot}: ${error.message}`))
        )
      )
    })
    return yield* Effect.never
  }))
