/**
 * A fresh PostgreSQL database that a server reaches through a TCP proxy the test can cut, freeze or point
 * elsewhere (`TcpProxy`). Closing it closes the proxy and drops the database.
 */
import { Effect } from "effect"
import { admin, databaseUrl } from "../../storage-contract/pg-support.js"
import { startTcpProxy, type Target, type TcpProxy } from "./TcpProxy.js"

export interface ProxiedDatabase {
  readonly proxy: TcpProxy
  /** The PostgreSQL server the proxy forwards to at first. */
  readonly postgres: Target
  /** The database through the proxy: the server's `DATABASE_URL`. */
  readonly url: string
  /** The database reached directly (not through the proxy). */
  readonly directUrl: string
  readonly close: () => Promise<void>
}

/** Creates `database` on `url`'s server and starts a proxy to it on 127.0.0.1. */
export const startProxiedDatabase = async (url: string, database: string): Promise<ProxiedDatabase> => {
  await Effect.runPromise(admin(url, `CREATE DATABASE ${database}`))
  const target = new URL(url)
  const postgres = { host: target.hostname, port: Number(target.port || 5432) }
  const proxy = await startTcpProxy(postgres)
  const throughProxy = new URL(databaseUrl(url, database))
  throughProxy.hostname = "127.0.0.1"
  throughProxy.port = String(proxy.port)
  const close = async () => {
    await proxy.close()
    await Effect.runPromise(admin(url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
  }
  return { proxy, postgres, url: throughProxy.toString(), directUrl: databaseUrl(url, database), close }
}
