/**
 * The load generator, run by `run.ts` as its own process (so it does not share a core's event loop with the
 * server): autocannon on one or more targets, a warm-up and then `runs` measured runs. Each connection loops over
 * its own list of requests (e.g. validate of its license, or activate then deactivate of its fingerprint).
 *
 * Input: one argument, a {@link LoadSpec} as JSON or the path of a file holding it (an argument is limited to
 * 128 KiB). Output: one JSON line per event on stdout, a {@link LoadEvent}.
 * Latencies are measured per response with sub-millisecond resolution (autocannon's own histogram rounds to
 * whole milliseconds); non-2xx responses are counted and kept out of the percentiles.
 */
import autocannon, { type Client } from "autocannon"
import { readFileSync } from "node:fs"
import { percentile } from "./stats.ts"

/** One request of a connection's loop; `path` is relative to the target's origin. */
export interface LoadRequest {
  readonly path: string
  readonly body: string
}

/** One server to load. */
export interface LoadTarget {
  /** The target's origin, e.g. `http://127.0.0.1:41234`. */
  readonly origin: string
  /** Connection `i` loops over `loops[i % loops.length]`. */
  readonly loops: ReadonlyArray<ReadonlyArray<LoadRequest>>
}

/**
 * What to run. With several targets, each is warmed up once, then the measured runs alternate between them
 * (run 1 of every target, then run 2, …), so that a target and the floor it is compared with see the same
 * background load, whatever else the machine is doing.
 */
export interface LoadSpec {
  readonly targets: ReadonlyArray<LoadTarget>
  readonly connections: number
  readonly warmupSeconds: number
  readonly durationSeconds: number
  readonly runs: number
}

/** The figures of one measured run. */
export interface RunFigures {
  readonly seconds: number
  readonly responses: number
  /** Responses per second, every status included. */
  readonly rps: number
  /** Latency of 2xx responses in milliseconds. */
  readonly p50: number
  readonly p99: number
  readonly max: number
  /** Responses by status code. */
  readonly statuses: Record<string, number>
  readonly errors: number
  readonly timeouts: number
  /** Mean response size in bytes (status line, headers and body). */
  readonly bytesPerResponse: number
}

/** A line of the output. */
export type LoadEvent =
  | { readonly event: "warmed"; readonly target: number; readonly figures: RunFigures }
  | { readonly event: "start"; readonly target: number; readonly run: number }
  | { readonly event: "run"; readonly target: number; readonly run: number; readonly figures: RunFigures }

const emit = (event: LoadEvent) => process.stdout.write(`${JSON.stringify(event)}\n`)

/** One autocannon run of `seconds`, with our own latency record. */
const measure = async (target: LoadTarget, connections: number, seconds: number): Promise<RunFigures> => {
  let next = 0
  const latencies: Array<number> = []
  const statuses: Record<string, number> = {}
  let bytes = 0
  const setupClient = (client: Client) => {
    const loop = target.loops[next++ % target.loops.length]!
    client.setRequests(loop.map((r) => ({
      method: "POST",
      path: r.path,
      headers: { "content-type": "application/json" },
      body: r.body
    })))
  }
  const started = performance.now()
  const instance = autocannon({
    url: target.origin,
    connections,
    duration: seconds,
    timeout: 30,
    setupClient
  })
  instance.on("response", (_client: Client, status: number, responseBytes: number, millis: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1
    bytes += responseBytes
    if (status >= 200 && status < 300) latencies.push(millis)
  })
  const result = await instance
  const elapsed = (performance.now() - started) / 1000
  const responses = Object.values(statuses).reduce((a, b) => a + b, 0)
  const sorted = Float64Array.from(latencies).sort()
  return {
    seconds: elapsed,
    responses,
    rps: responses / elapsed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    bytesPerResponse: responses === 0 ? 0 : bytes / responses
  }
}

const argument = process.argv[2] ?? ""
const spec = JSON.parse(argument.startsWith("{") ? argument : readFileSync(argument, "utf8")) as LoadSpec
for (const [target, t] of spec.targets.entries()) {
  if (spec.warmupSeconds > 0) emit({ event: "warmed", target, figures: await measure(t, spec.connections, spec.warmupSeconds) })
}
for (let run = 1; run <= spec.runs; run++) {
  for (const [target, t] of spec.targets.entries()) {
    emit({ event: "start", target, run })
    emit({ event: "run", target, run, figures: await measure(t, spec.connections, spec.durationSeconds) })
  }
}
