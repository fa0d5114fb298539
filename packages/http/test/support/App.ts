/**
 * The real bundled server (every route, the domain, signing, the CRL) started in-process on an ephemeral port,
 * on the memory store or a throw-away PGlite store, with a known read_write API key.
 */
import { ConfigProvider, Layer, References } from "effect"
import { Engine } from "@lm/domain"
import { layerOnClient, PgliteTemplate } from "@lm/storage-pg"
import { MemoryStore } from "@lm/storage-memory"
import { serverLayerOn } from "../../src/server/App.js"
import type { WebhookSenderOptions } from "../../src/server/WebhookSender.js"
import { type ClientGuard, layerClientGuards } from "../../src/server/ClientPipeline.js"
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
}

const storeLayer = (store: TestStore) =>
  store === "memory" ? MemoryStore.layer : layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporary))

/** Starts the whole server; `close()` it after the tests. */
export const startApp = async (
  store: TestStore,
  options: Engine.Options & {
    readonly settings?: Parameters<typeof HttpSettings.layer>[0]
    /** Replaces the store layer `store` names (e.g. a store wrapped to fail on demand). */
    readonly storeLayer?: Layer.Layer<any, any, never>
    /** Public guards of the client routes (`ClientGuards`; none by default). */
    readonly clientGuards?: ReadonlyArray<ClientGuard>
    /** Settings of the undici webhook sender (e.g. a lookup that resolves every name to loopback). */
    readonly webhookSender?: Partial<WebhookSenderOptions>
    /** Environment variables the server reads as it starts, over the process's (e.g. `LM_CONSOLE`). */
    readonly env?: Readonly<Record<string, string>>
  } = {}
): Promise<TestApp> => {
  process.env.LM_BOOTSTRAP_CONSUMER_KEY = adminKey.consumerKey
  process.env.LM_BOOTSTRAP_CONSUMER_SECRET = adminKey.consumerSecret
  const layer = serverLayerOn(options.storeLayer ?? storeLayer(store), { storage: store, description: store }, { host: "127.0.0.1", port: 0 }, {
    sweepIntervalSeconds: 0,
    ...options
  }, options.webhookSender).pipe(
    Layer.provide(HttpSettings.layer(options.settings ?? {})),
    Layer.provide(layerClientGuards(options.clientGuards ?? [])),
    Layer.provide(options.env === undefined ? Layer.empty : ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ...process.env as Record<string, string>, ...options.env } }))),
    // Start-up and shutdown lines would drown the test output; warnings and errors still show.
    Layer.provide(Layer.succeed(References.MinimumLogLevel, process.env.LM_TEST_LOG_LEVEL === "debug" ? "Debug" : "Warn"))
  )
  const server = await startServer(layer as any, { restRoot: options.settings?.restRoot ?? "/api" })
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
  return { ...server, call }
}
