/**
 * One real `lm serve` per client test file, on a fresh PostgreSQL database (DATABASE_URL; PostgreSQL so that
 * `lm signing-keys rotate` can run against the same store as the running server), with the tests' admin key and
 * no rate limit. Also: the management calls the tests make as the administrator, and the CLI.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { Effect, Exit, Scope } from "effect"
import { adminKey } from "../../../packages/http/test/support/App.js"
import { basic } from "../../../packages/http/test/support/Management.js"
import { freshDatabase } from "../../storage-contract/pg-support.js"
import { exitWithin, spawnServer, waitForOutput } from "../../http/support/Child.js"
import { builtLm } from "../../support/built.js"
import { serviceUrl } from "../../support/services.js"

export interface TestServer {
  /** The server's origin, e.g. `http://127.0.0.1:41234` (the API is under `/api/lm/v1`). */
  readonly origin: string
  /** `{origin}/api/lm/v1`. */
  readonly apiBase: string
  /** Everything the server's process got: its store settings, for the CLI. */
  readonly env: Readonly<Record<string, string>>
  /** A management call with the admin key; resolves with the status and the parsed body. */
  readonly admin: (method: string, route: string, body?: unknown) => Promise<{ status: number; body: any }>
  /** Runs `lm <args>` against the server's store. */
  readonly cli: (...args: Array<string>) => Promise<string>
  /** Starts another `lm serve` process on the same store, with `extraEnv` on top (e.g. a new `LM_SIGNING_KEY`). */
  readonly another: (extraEnv: Readonly<Record<string, string>>) => Promise<{ readonly origin: string; readonly stop: () => Promise<void> }>
  readonly stop: () => Promise<void>
}

/** Spawns `lm serve` and waits for it to listen; resolves with its API base and a way to stop it. */
const listen = async (env: Readonly<Record<string, string>>) => {
  const server = spawnServer(env)
  const apiBase = (await waitForOutput(server, /Listening on (http:\/\/\S+)/))[1]!
  const stop = async () => {
    server.child.kill("SIGTERM")
    await exitWithin(server, 30_000).catch(() => server.child.kill("SIGKILL"))
  }
  return { apiBase, stop }
}

export const startServer = async (name: string, extraEnv: Readonly<Record<string, string>> = {}): Promise<TestServer> => {
  const url = serviceUrl("DATABASE_URL")
  if (url === "") {
    throw new Error("the client tests need PostgreSQL: set DATABASE_URL (CI does), e.g. postgres://postgres@127.0.0.1:5432/postgres")
  }
  const scope = Effect.runSync(Scope.make())
  const dbUrl = await Effect.runPromise(Scope.provide(freshDatabase(url, `lm_client_${name}_${process.pid}_${Date.now()}`), scope))
  const env = {
    DATABASE_URL: dbUrl,
    LM_MASTER_KEY: Buffer.alloc(32, 11).toString("base64"),
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_RATE_LIMIT: "off",
    LM_SIGNING_KEY: "",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
    ...extraEnv
  }
  const started = await listen(env).catch(async (error: unknown) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  const { apiBase } = started
  const others: Array<() => Promise<void>> = []
  const authorization = basic(adminKey.consumerKey, adminKey.consumerSecret)
  return {
    origin: new URL(apiBase).origin,
    apiBase,
    env,
    admin: async (method, route, body) => {
      const response = await fetch(`${apiBase}${route}`, {
        method,
        headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return { status: response.status, body: await response.json() }
    },
    cli: async (...args) => {
      const { DATABASE_URL: _url, LM_STORAGE: _storage, ...inherited } = process.env
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [builtLm(), ...args],
        { env: { ...inherited, ...env }, timeout: 60_000 }
      )
      return stdout
    },
    another: async (extraEnv) => {
      const other = await listen({ ...env, ...extraEnv })
      others.push(other.stop)
      return { origin: new URL(other.apiBase).origin, stop: other.stop }
    },
    stop: async () => {
      await Promise.all([...others, started.stop].map((stop) => stop()))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

/** Creates a license with the admin key; resolves with its key. */
export const createLicense = async (server: TestServer, fields: Record<string, unknown> = {}): Promise<string> => {
  const created = await server.admin("POST", "/licenses", fields)
  if (created.status !== 201) throw new Error(`license not created: ${JSON.stringify(created.body)}`)
  return created.body.data.license_key as string
}
