/**
 * The bundled server on a fresh PostgreSQL database that it reaches through a TCP proxy the test can cut, freeze
 * or point elsewhere (`TcpProxy`), with the known admin key. Closing it restores the proxy, stops the server and
 * drops the database.
 */
import { Layer } from "effect"
import type { Engine } from "@lm/domain"
import { layerPostgresStore, type PostgresOptions } from "@lm/storage-pg"
import { adminKey } from "../../../packages/http/test/support/App.js"
import { type RunningServer, startServer } from "../../../packages/http/test/support/TestServer.js"
import { serverLayerOn } from "@lm/server"
import { HttpSettings } from "@lm/http"
import { startProxiedDatabase } from "./ProxiedDatabase.js"
import type { Target, TcpProxy } from "./TcpProxy.js"

export interface ProxiedServer {
  readonly server: RunningServer
  readonly proxy: TcpProxy
  /** The PostgreSQL server the proxy forwards to at first. */
  readonly postgres: Target
  /** The server's database, reached directly (not through the proxy): another server's link. */
  readonly directUrl: string
  readonly close: () => Promise<void>
}

/**
 * Starts it on `url`'s server, in a new database named `database`; `logger` replaces the server's logger, `engine`
 * adds to its engine's options (the sweep is off), `store` sets the store's (a shorter `storeCallTimeout` than the
 * 15 s default lets a test of a frozen link wait less).
 */
export const startProxiedServer = async (
  url: string,
  database: string,
  logger: Layer.Layer<never> = Layer.empty,
  engine: Engine.Options = {},
  store: Omit<PostgresOptions, "url"> = {}
): Promise<ProxiedServer> => {
  const proxied = await startProxiedDatabase(url, database)
  const { postgres, proxy } = proxied
  process.env.LM_BOOTSTRAP_CONSUMER_KEY = adminKey.consumerKey
  process.env.LM_BOOTSTRAP_CONSUMER_SECRET = adminKey.consumerSecret
  const layer = serverLayerOn(
    layerPostgresStore({ ...store, url: proxied.url }),
    { storage: "postgres", description: "postgres (through a proxy)" },
    { host: "127.0.0.1", port: 0 },
    { ...engine, sweepIntervalSeconds: 0 }
  ).pipe(Layer.provide(HttpSettings.layer({})), Layer.provide(logger))
  const server = await startServer(layer as any)
  const close = async () => {
    await proxy.restore()
    await server.close()
    await proxied.close()
  }
  return { server, proxy, postgres, directUrl: proxied.directUrl, close }
}
