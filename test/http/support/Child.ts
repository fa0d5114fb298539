/**
 * The bundled server (`lm serve`) as a child process, run from the build (`builtLm`: `npm test` builds first), with
 * helpers to wait for its start-up line and its exit.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { builtLm } from "../../support/built.js"

/** A running `lm serve`, with everything it printed so far. */
export interface ServerProcess {
  readonly child: ChildProcess
  /** stdout and stderr, interleaved as they came. */
  readonly output: () => string
  /** stderr alone. */
  readonly stderr: () => string
  /** Resolves with the exit code (or the signal that ended it). */
  readonly exited: Promise<number | NodeJS.Signals>
}

/**
 * The master key of servers on PostgreSQL in tests: without it each would keep `./data/master.key` in the
 * directory the tests run from; servers sharing a database must share it anyway.
 */
const testMasterKey = Buffer.alloc(32, 11).toString("base64")

/**
 * Starts `lm serve` with `env` on top of this process's environment, minus the store settings (`DATABASE_URL`,
 * `LM_STORAGE`), which only `env` decides. On PostgreSQL without master key settings it gets the tests' one.
 * Rate limits are off unless `env` sets `LM_RATE_LIMIT`.
 */
export const spawnServer = (env: Readonly<Record<string, string>>): ServerProcess => {
  const { DATABASE_URL: _url, LM_STORAGE: _storage, ...inherited } = process.env
  const masterKey = env.DATABASE_URL !== undefined && env.LM_MASTER_KEY === undefined && env.LM_MASTER_KEY_FILE === undefined
    ? { LM_MASTER_KEY: testMasterKey }
    : {}
  const child = spawn(
    process.execPath,
    [builtLm(), "serve"],
    // Rate limits off unless `env` turns them on: the tests send far more than 120 requests a minute from 127.0.0.1.
    { env: { ...inherited, LM_RATE_LIMIT: "off", ...masterKey, ...env }, stdio: ["ignore", "pipe", "pipe"] }
  )
  let output = ""
  let stderr = ""
  child.stdout!.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")))
  child.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
    stderr += chunk.toString("utf8")
  })
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? -1))
  )
  return { child, output: () => output, stderr: () => stderr, exited }
}

/** Resolves with the first match of `pattern` in the server's output; rejects if it exits first or after `ms`. */
export const waitForOutput = (server: ServerProcess, pattern: RegExp, ms = 60_000): Promise<RegExpMatchArray> =>
  new Promise((resolve, reject) => {
    const check = () => {
      const match = server.output().match(pattern)
      if (match === null) return false
      done()
      resolve(match)
      return true
    }
    const timer = setTimeout(() => {
      done()
      reject(new Error(`no ${pattern} within ${ms} ms:\n${server.output()}`))
    }, ms)
    const onData = () => void check()
    const onExit = (code: number | null) => {
      if (check()) return
      done()
      reject(new Error(`exited (${code}) before printing ${pattern}:\n${server.output()}`))
    }
    const done = () => {
      clearTimeout(timer)
      server.child.stdout!.off("data", onData)
      server.child.stderr!.off("data", onData)
      server.child.off("exit", onExit)
    }
    server.child.stdout!.on("data", onData)
    server.child.stderr!.on("data", onData)
    server.child.once("exit", onExit)
    check()
  })

/** The exit code, or a rejection after `ms` (a hang). */
export const exitWithin = (server: ServerProcess, ms: number): Promise<number | NodeJS.Signals> =>
  Promise.race([
    server.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still running ${ms} ms after SIGTERM:\n${server.output()}`)), ms).unref()
    )
  ])
