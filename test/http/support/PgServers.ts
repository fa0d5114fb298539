/**
 * Several `lm serve` processes on one fresh PostgreSQL database (two processes cannot share PGlite), with the
 * bootstrap admin key, for the tests of what one server's change does to the others.
 */
import { Effect, Exit, Scope } from "effect"
import { adminKey } from "../../../packages/http/test/support/App.js"
import { basic } from "../../../packages/http/test/support/Management.js"
import { freshDatabase } from "../../storage-contract/pg-support.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./Child.js"

export const admin = basic(adminKey.consumerKey, adminKey.consumerSecret)

export interface Server {
  readonly name: string
  readonly process: ServerProcess
  readonly base: string
}

/** A request with a JSON body (as the admin when `auth`), answered with its status and parsed body. */
export const request = async (server: Server, method: string, route: string, body?: unknown, auth = false) => {
  const response = await fetch(`${server.base}${route}`, {
    method,
    headers: { "content-type": "application/json", ...(auth ? { authorization: admin } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as any }
}

export const post = (server: Server, route: string, body: unknown, auth = false) => request(server, "POST", route, body, auth)

/** The servers and a way to stop them and drop their database. */
export interface PgServers {
  readonly servers: ReadonlyArray<Server>
  readonly close: () => Promise<void>
}

/**
 * Starts one server per name on a fresh database made from `url` (named after `prefix`), one after the other (the
 * first migrates it), each with `env` (or `env(name)`) on top of the defaults (port 0 on 127.0.0.1, sweeper off,
 * the admin key).
 */
export const startPgServers = async (
  url: string,
  prefix: string,
  names: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> | ((name: string) => Readonly<Record<string, string>>) = {}
): Promise<PgServers> => {
  const scope = Effect.runSync(Scope.make())
  const servers: Array<Server> = []
  const close = async () => {
    await Promise.all(servers.map(async (server) => {
      server.process.child.kill("SIGTERM")
      await exitWithin(server.process, 30_000).catch(() => server.process.child.kill("SIGKILL"))
    }))
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  try {
    const dbUrl = await Effect.runPromise(Scope.provide(freshDatabase(url, `${prefix}_${process.pid}_${Date.now()}`), scope))
    for (const name of names) {
      const child = spawnServer({
        DATABASE_URL: dbUrl,
        PORT: "0",
        HOST: "127.0.0.1",
        LM_SWEEP_INTERVAL: "0",
        LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
        LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
        ...(typeof env === "function" ? env(name) : env)
      })
      servers.push({ name, process: child, base: "" })
      const [, base] = await waitForOutput(child, /Listening on (http:\/\/\S+)/)
      servers[servers.length - 1] = { name, process: child, base: base! }
    }
  } catch (error) {
    await close()
    throw error
  }
  return { servers, close }
}
