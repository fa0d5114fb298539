/**
 * The PGlite store (the embedded default) under concurrent load: `lm serve` on PGlite, once on an empty data folder
 * and once on a copy of the migrated template (what the console tests start on), two servers side by side, each
 * sent waves of concurrent mixed requests, a quarter of them abandoned by the client mid-flight (support/MixedLoad).
 * No answer is ever a 500 or outside the envelope, and afterwards every license answered 201 is there. Before the
 * bridge handed PGlite's one session to one socket at a time, the migrated copy's server answered 500 from the first
 * wave (`prepared statement "effect_…" does not exist`, then `current transaction is aborted`).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { adminKey } from "../../packages/http/test/support/App.js"
import { expectIntact, mixedLoad } from "../../packages/http/test/support/MixedLoad.js"
import { type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { migratedPgliteFolder } from "./support/PgliteFolder.js"

const work = mkdtempSync(join(tmpdir(), "lm-pglite-load-"))
const servers: Array<ServerProcess> = []
afterAll(() => {
  for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  rmSync(work, { recursive: true, force: true })
})

const start = async (name: string, migrated: boolean): Promise<{ base: string; server: ServerProcess }> => {
  const dataDir = join(work, name)
  if (migrated) await migratedPgliteFolder(dataDir)
  const server = spawnServer({
    LM_DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
  })
  servers.push(server)
  const [, base] = await waitForOutput(server, /Listening on (http:\/\/\S+)/, 120_000)
  return { base: base!, server }
}

it("two PGlite servers (empty folder, migrated copy) answer waves of concurrent, abandoned requests: no 500, data intact", async () => {
  const started = await Promise.all([start("empty", false), start("migrated", true)])
  const results = await Promise.all(started.map(({ base }) => mixedLoad(base, 30)))
  for (const [index, { base, server }] of started.entries()) {
    await expectIntact(base, results[index]!, () => server.output().slice(-4000))
    expect(server.output()).not.toMatch(/does not exist|current transaction is aborted/)
  }
}, 300_000)
