/**
 * The real bundled server (every route, the domain, signing, the CRL) started in-process on an ephemeral port,
 * on the memory store or a throw-away PGlite store, with a known read_write API key.
 */
import { appendFileSync } from "node:fs"
import { Clock, ConfigProvider, Effect, Layer, References } from "effect"
import { Engine, Services } from "@lm/domain"
import { layerOnClient, PgliteTemplate } from "@lm/storage-pg"
import { MemoryStore } from "@lm/storage-memory"
import { ArtifactSettings, serverLayerOn } from "@lm/server"
import type { WebhookSenderOptions } from "@lm/server"
import { type ClientGuard, layerClientGuards } from "../../src/server/ClientPipeline.js"
import { type AnsweredRequest, RequestObserver } from "../../src/server/RequestSteps.js"
import { HttpSettings } from "../../src/server/Settings.js"
import { startServer, type RunningServer } from "./TestServer.js"

export type TestStore = "memory" | "pglite"

/** The bootstrap key every test app is started with (`LM_BOOTSTRAP_CONSUMER_*`). */
export const adminKey = {
  consumerKey: `ck_${"a1".repeat(20)}`,
  consumerSecret: `cs_${"b2".repeat(20)}`
}

/** `Authorization` header of {@link adminKey}. */
export const adminAuth = `Basic ${Buffer.from(`${adminKey.consumerKey}:${adminKey.consumerSecret}`).toString("base64")}`

/** A running app plus helpers to call it. */
export interface TestApp extends RunningServer {
  /** JSON request to `{apiBase}{path}`; returns status, headers and the parsed body. */
  readonly call: (
    method: string,
    path: string,
    options?: { readonly body?: unknown; readonly auth?: string | null; readonly headers?: Record<string, string> }
  ) => Promise<{ readonly status: number; readonly headers: Headers; readonly body: any }>
  /**
   * Runs the background jobs once, now, as their loops would, instead of waiting for their intervals: the sweep,
   * the subscriptions' period-end job and anomaly detection (on a clock `aheadMillis` ahead, default 0, so a
   * lease or heartbeat of a second is over without waiting for it), then webhook delivery until a round sends nothing.
   */
  readonly runJobs: (options?: { readonly aheadMillis?: number }) => Promise<void>
}

/** `clock` with its wall time mapped through `time` (monotonic time and sleeps stay `clock`'s). */
const mappedClock = (clock: Clock.Clock, time: (millis: number) => number): Clock.Clock => {
  const nanos = () => {
    const now = clock.currentTimeNanosUnsafe()
    return now + BigInt(time(Number(now / 1_000_000n))) * 1_000_000n - (now / 1_000_000n) * 1_000_000n
  }
  return {
    currentTimeMillisUnsafe: () => time(clock.currentTimeMillisUnsafe()),
    currentTimeMillis: Effect.sync(() => time(clock.currentTimeMillisUnsafe())),
    currentTimeNanosUnsafe: nanos,
    currentTimeNanos: Effect.sync(nanos),
    monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: clock.monotonicTimeNanos,
    sleep: (duration) => clock.sleep(duration)
  }
}

/** A wall clock the test moves: it stands still at the time it was made until `advance`d. Sleeps are real. */
export interface ManualClock {
  readonly clock: Clock.Clock
  readonly advance: (millis: number) => void
}

export const manualClock = (): ManualClock => {
  const start = Date.now()
  let offset = 0
  return {
    clock: mappedClock(Clock.Clock.defaultValue(), () => start + offset),
    advance: (millis) => {
      offset += millis
    }
  }
}

/**
 * A wall clock that runs with the real one, `advance`d ahead of it by the test (a token or a lease is over
 * without waiting for it). Sleeps are real.
 */
export const aheadClock = (): ManualClock => {
  let offset = 0
  return {
    clock: mappedClock(Clock.Clock.defaultValue(), (millis) => millis + offset),
    advance: (millis) => {
      offset += millis
    }
  }
}

/** The jobs `runJobs` runs, in order; webhook delivery last, so it sends what the others caused. */
const jobs = (aheadMillis: number) =>
  Effect.gen(function*() {
    const ahead = mappedClock(yield* Clock.Clock, (millis) => millis + aheadMillis)
    const sweeper = yield* Services.Sweeper
    const subscriptions = yield* Services.Subscriptions
    const analytics = yield* Services.Analytics
    yield* Effect.all([sweeper.sweepOnce, subscriptions.runDue, Effect.andThen(analytics.moveTopWindows, analytics.detectOnce)], {
      discard: true
    }).pipe(Effect.provideService(Clock.Clock, ahead))
    // A round can cause more to send (a webhook disabled by its failure announces it): rounds until one sends nothing.
    const webhooks = yield* Services.Webhooks
    for (let round = 0; round < 20 && (yield* webhooks.run) > 0; round++) {
      // the next round sends what this one caused
    }
  })

const storeLayer = (store: TestStore) =>
  store === "memory" ? MemoryStore.layer : layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporaryMigrated))

/**
 * With `LM_TEST_SERVER_STARTS` naming a file, every server start appends a line to it (`<store> <pid>`), so a run
 * of the suite can count them (docs/testing.md).
 */
const countStart = (store: TestStore) => {
  const file = process.env.LM_TEST_SERVER_STARTS
  if (file !== undefined && file !== "") appendFileSync(file, `${store} ${process.pid}\n`)
}

/** Starts the whole server; `close()` it after the tests. */
export const startApp = async (
  store: TestStore,
  options: Engine.Options & {
    readonly settings?: Parameters<typeof HttpSettings.layer>[0]
    /** Where release artifacts are kept (default: a temporary folder). */
    readonly artifacts?: Partial<ArtifactSettings>
    /** Replaces the store layer `store` names (e.g. a store wrapped to fail on demand). */
    readonly storeLayer?: Layer.Layer<any, any, never>
    /** Public guards of the client routes (`ClientGuards`; none by default). */
    readonly clientGuards?: ReadonlyArray<ClientGuard>
    /** Settings of the undici webhook sender (e.g. a lookup that resolves every name to loopback). */
    readonly webhookSender?: Partial<WebhookSenderOptions>
    /** Told of every answered request (`RequestObserver`; none by default). */
    readonly requestObserver?: (request: AnsweredRequest) => void
    /** Environment variables the server reads as it starts, over the process's (e.g. `LM_CONSOLE`). */
    readonly env?: Readonly<Record<string, string>>
    /** The server's clock (e.g. a {@link manualClock}, so that a rate's refill does not depend on the machine's speed). */
    readonly clock?: Clock.Clock
  } = {}
): Promise<TestApp> => {
  process.env.LM_BOOTSTRAP_CONSUMER_KEY = adminKey.consumerKey
  process.env.LM_BOOTSTRAP_CONSUMER_SECRET = adminKey.consumerSecret
  const layer = serverLayerOn(options.storeLayer ?? storeLayer(store), { storage: store, description: store }, { host: "127.0.0.1", port: 0 }, {
    // Background jobs are off unless a test turns one on (or runs it: `runJobs`), so none acts behind a test's back.
    sweepIntervalSeconds: 0,
    subscriptionJobIntervalSeconds: 0,
    anomalyIntervalSeconds: 0,
    ...options
  }, options.webhookSender).pipe(
    Layer.provide(HttpSettings.layer(options.settings ?? {})),
    Layer.provide(Layer.succeed(ArtifactSettings, { dir: undefined, s3: undefined, ...options.artifacts })),
    Layer.provide(layerClientGuards(options.clientGuards ?? [])),
    Layer.provide(Layer.succeed(RequestObserver, options.requestObserver)),
    Layer.provide(options.clock === undefined ? Layer.empty : Layer.succeed(Clock.Clock, options.clock)),
    Layer.provide(options.env === undefined ? Layer.empty : ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ...process.env as Record<string, string>, ...options.env } }))),
    // Start-up and shutdown lines would drown the test output; warnings and errors still show.
    Layer.provide(Layer.succeed(References.MinimumLogLevel, process.env.LM_TEST_LOG_LEVEL === "debug" ? "Debug" : "Warn"))
  )
  const server = await startServer(layer as any, { restRoot: options.settings?.restRoot ?? "/api" })
  countStart(store)
  const call: TestApp["call"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers }
    const auth = opts.auth === undefined ? adminAuth : opts.auth
    if (auth !== null) headers.authorization = auth
    let body: string | undefined
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(`${server.apiBase}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed }
  }
  const runJobs: TestApp["runJobs"] = (opts = {}) => server.run(jobs(opts.aheadMillis ?? 0))
  return { ...server, call, runJobs }
}

const shared = new Map<TestStore, Promise<TestApp>>()

/**
 * The server the test files of one vitest worker share on `store`, started with the defaults of {@link startApp}
 * (every background job off) on first use. The `server` project runs with `isolate: false`, so a worker keeps it
 * from file to file instead of starting one per file; its `close()` does nothing (the worker's exit ends it).
 * Tests on it keep their data apart (their own product ids from `unique()`, keys, fingerprints) and never count
 * what the whole store holds; a test that needs other options, the whole store, or to stop the server calls
 * `startApp`.
 */
export const sharedApp = async (store: TestStore): Promise<TestApp> => {
  let app = shared.get(store)
  if (app === undefined) {
    app = startApp(store)
    shared.set(store, app)
    // A failed start is not kept: the next file tries again.
    app.catch(() => shared.delete(store))
  }
  return { ...(await app), close: async () => {} }
}
