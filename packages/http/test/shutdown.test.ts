/**
 * Graceful shutdown of the server process: on SIGTERM it stops accepting connections, finishes the requests in
 * flight and exits 0. Runs the test API in a child process (`support/serveEcho.ts`) on the TypeScript sources.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { get } from "node:http"
import { fileURLToPath } from "node:url"
import { afterEach, expect, it } from "vitest"

const support = (file: string) => fileURLToPath(new URL(`./support/${file}`, import.meta.url))

let child: ChildProcess | undefined
afterEach(() => {
  if (child !== undefined && child.exitCode === null) child.kill("SIGKILL")
})

/** Resolves with the first match of `pattern` in the child's stdout. */
const waitForOutput = (process: ChildProcess, pattern: RegExp): Promise<RegExpMatchArray> =>
  new Promise((resolve, reject) => {
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const match = output.match(pattern)
      if (match !== null) {
        process.stdout!.off("data", onData)
        resolve(match)
      }
    }
    process.stdout!.on("data", onData)
    process.once("exit", (code) => reject(new Error(`exited (${code}) before printing ${pattern}:\n${output}`)))
  })

/** Opens a new connection (no keep-alive pool) and resolves with the status, or "refused". */
const freshRequest = (url: string): Promise<number | "refused"> =>
  new Promise((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode!))
    })
    req.on("error", () => resolve("refused"))
  })

it("on SIGTERM stops accepting connections, finishes requests in flight and exits 0", async () => {
  const started = spawn(process.execPath, ["--import", support("ts-resolve.mjs"), support("serveEcho.ts")], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  child = started
  const exited = new Promise<number | null>((resolve) => started.once("exit", (code) => resolve(code)))
  const [, apiBase] = await waitForOutput(started, /Listening on (http:\/\/[^\s"]+)/)
  expect(await freshRequest(`${apiBase}/health`)).toBe(200)

  const requestStarted = waitForOutput(started, /slow request started/)
  const slow = fetch(`${apiBase}/echo/slow?ms=3000`).then(async (response) => ({
    status: response.status,
    body: await response.json()
  }))
  let slowDone = false
  void slow.then(() => slowDone = true)
  await requestStarted

  started.kill("SIGTERM")
  let refusedWhileFinishing = false
  while (!slowDone && !refusedWhileFinishing) {
    refusedWhileFinishing = (await freshRequest(`${apiBase}/health`)) === "refused"
  }

  expect(await slow).toEqual({ status: 200, body: { success: true, data: { slept: 3000 }, meta: {} } })
  expect(refusedWhileFinishing).toBe(true)
  expect(await exited).toBe(0)
})
