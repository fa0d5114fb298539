/**
 * The built `lm` (`apps/server/dist/bin/lm.js`) as a user runs it: `lm serve` on the memory store in a child
 * process, and commands run as further processes against it (`LM_URL` and the bootstrap key), with their real
 * output and exit codes. `npm test` builds first.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { builtLm } from "../../support/built.js"

export const bin = builtLm()

/** The key every test server is started with (`LM_BOOTSTRAP_CONSUMER_*`). */
export const adminKey = { consumerKey: `ck_${"c3".repeat(20)}`, consumerSecret: `cs_${"d4".repeat(20)}` }

/** What a command printed and how it ended. */
export interface Run {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

/** The environment of every process: no store or key settings of the caller's. */
const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, LM_STORAGE: "memory", DATABASE_URL: "", LM_URL: "", NO_COLOR: "1" }
  for (const name of ["LM_BOOTSTRAP_CONSUMER_KEY", "LM_BOOTSTRAP_CONSUMER_SECRET", "LM_CONSUMER_KEY", "LM_CONSUMER_SECRET"]) delete env[name]
  return env
}

/** Runs `lm` with `args` and `env` over the base environment. */
export const lm = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...baseEnv(), ...env } })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => { out += chunk })
    child.stderr.on("data", (chunk) => { err += chunk })
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, out, err }))
  })

/** A running `lm serve` and a runner of commands against it. */
export interface LmServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** `{url}/api/lm/v1` */
  readonly apiBase: string
  /** `lm` against this server with the admin key (more environment over it). */
  readonly run: (args: ReadonlyArray<string>, env?: Record<string, string>) => Promise<Run>
  /** `lm … --json`, parsed; fails the test unless the command succeeded. */
  readonly json: (args: ReadonlyArray<string>) => Promise<any>
  /** A management request with the admin key, for setting up what a command then reads. */
  readonly call: (method: string, path: string, body?: unknown) => Promise<any>
  readonly stop: () => Promise<void>
}

/** Starts `lm serve` on the memory store on a free port (more environment in `env`). */
export const startLmServer = async (env: Record<string, string> = {}): Promise<LmServer> => {
  const child: ChildProcess = spawn(process.execPath, [bin, "serve"], {
    env: {
      ...baseEnv(),
      PORT: "0",
      LM_SWEEP_INTERVAL: "0",
      LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
      LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
      LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"),
      ...env
    }
  })
  const apiBase = await new Promise<string>((resolve, reject) => {
    let out = ""
    const seen = (chunk: Buffer) => {
      out += chunk
      const found = /Listening on (http:\/\/\S+)/.exec(out)?.[1]
      if (found !== undefined) resolve(found)
    }
    child.stdout!.on("data", seen)
    child.stderr!.on("data", seen)
    child.on("exit", (code) => reject(new Error(`lm serve exited with ${code}: ${out}`)))
  })
  const url = new URL(apiBase).origin
  const auth = { LM_URL: url, LM_CONSUMER_KEY: adminKey.consumerKey, LM_CONSUMER_SECRET: adminKey.consumerSecret }
  const run = (args: ReadonlyArray<string>, more: Record<string, string> = {}) => lm(args, { ...auth, ...more })
  const basic = `Basic ${Buffer.from(`${adminKey.consumerKey}:${adminKey.consumerSecret}`).toString("base64")}`
  return {
    url,
    apiBase,
    run,
    json: async (args) => {
      const result = await run([...args, "--json"])
      if (result.code !== 0) throw new Error(`lm ${args.join(" ")} exited ${result.code}: ${result.err}`)
      return JSON.parse(result.out)
    },
    call: async (method, path, body) => {
      const response = await fetch(`${apiBase}${path}`, {
        method,
        headers: { authorization: basic, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return response.json()
    },
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      await exited
    }
  }
}
