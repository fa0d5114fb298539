/**
 * `examples/licensed-app.ts` end to end, as a user runs it (Node on the built packages: `npm test` builds first)
 * against a real server: it activates, validates, is entitled offline, beats, and on SIGINT frees its seat.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { createClient } from "@lm/client"
import { eventually } from "../support/eventually.js"
import { createLicense, startServer, type TestServer } from "./support/server.js"

const root = join(import.meta.dirname, "..", "..")
let server: TestServer

beforeAll(async () => {
  server = await startServer("example")
}, 120_000)

afterAll(async () => {
  await server?.stop()
}, 60_000)

it("activates, validates, is entitled offline, beats, and deactivates on SIGINT", async () => {
  const key = await createLicense(server, { max_activations: 1, product_id: 3 })
  const trustedKeys = (await createClient({ baseUrl: server.origin }).publicKeys()).keys.map((k) => k.public_key)
  const stateFile = join(mkdtempSync(join(tmpdir(), "lm-example-")), "license.json")
  const child = spawn(process.execPath, [join(root, "examples", "licensed-app.ts")], {
    cwd: root,
    env: {
      ...process.env,
      LM_URL: server.origin,
      LM_TRUSTED_KEYS: trustedKeys.join(","),
      LM_PRODUCT_ID: "3",
      LM_LICENSE_KEY: key.toLowerCase(),
      LM_STATE_FILE: stateFile
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")))
  child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  try {
    await eventually(() => expect(output).toContain("heartbeat ok"), { timeout: 30_000, interval: 50 })
    expect(output).toMatch(/activated machine \d+\nvalidated: valid\nentitled offline until \d{4}-/)
    expect(existsSync(stateFile)).toBe(true)
    const machines = await server.admin("GET", `/licenses/${key}/machines`)
    expect(machines.body.data.machines).toMatchObject([{ status: "active", name: "example-app", app_version: "1.0.0" }])
    child.kill("SIGINT")
    expect(await exited).toBe(0)
    expect(output).toContain("deactivated")
    const after = await server.admin("GET", `/licenses/${key}/machines`)
    expect(after.body.data.machines).toMatchObject([{ status: "inactive", deactivation_reason: "client" }])
  } finally {
    child.kill("SIGKILL")
  }
})
