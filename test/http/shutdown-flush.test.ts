/**
 * Issue 4: the event log is never lost on a clean shutdown. The real server (`lm serve`) runs as a child process
 * on PGlite in a data folder; client calls on one license (validations, activations, heartbeats, deactivations
 * and refusals) are recorded in memory and written in batches every 250 ms. SIGTERM right after the last
 * answer: the process exits 0, and the data folder, opened again with @lm/storage-pg, holds exactly one event
 * per call, each against that license, next to the license and its machines.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Ports } from "@lm/domain"
import { layerPgliteStore } from "@lm/storage-pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { migratedPgliteFolder } from "./support/PgliteFolder.js"

let dataDir: string
let server: ServerProcess | undefined

beforeAll(async () => {
  dataDir = await migratedPgliteFolder(mkdtempSync(join(tmpdir(), "lm-shutdown-flush-")))
})
afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

const admin = basic(adminKey.consumerKey, adminKey.consumerSecret)

it("writes every buffered event before exiting 0 on SIGTERM; the data folder reopens with all of them", async () => {
  server = spawnServer({
    LM_DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_RATE_LIMIT: "off",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
  })
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+)/)

  const created = await fetch(`${apiBase}/licenses`, {
    method: "POST",
    headers: { authorization: admin, "content-type": "application/json" },
    body: JSON.stringify({ max_activations: 2 })
  })
  expect(created.status).toBe(201)
  const license = ((await created.json()) as any).data as { id: number; license_key: string }
  const key = license.license_key

  const client = (route: string, body: Record<string, unknown>) =>
    fetch(`${apiBase}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ license_key: key, ...body })
    }).then(async (response) => ({ route, status: response.status, code: ((await response.json()) as any)?.code as string | undefined }))

  // Two seats are taken first, so that everything after has a known outcome.
  const seats = [await client("/activate", { fingerprint: "seat-1" }), await client("/activate", { fingerprint: "seat-2" })]
  expect(seats.map((s) => s.status)).toEqual([201, 201])
  // Then a burst, all at once: successes and refusals, each one event.
  const burst = await Promise.all([
    ...Array.from({ length: 40 }, (_, i) => client("/validate", i % 2 === 0 ? {} : { fingerprint: "seat-1", nonce: i })),
    ...Array.from({ length: 10 }, (_, i) => client("/activate", { fingerprint: `refused-${i}` })),
    ...Array.from({ length: 10 }, () => client("/activate", { fingerprint: "seat-2" })),
    ...Array.from({ length: 10 }, () => client("/heartbeat", { fingerprint: "seat-1", app_version: "1.0.0" })),
    ...Array.from({ length: 5 }, () => client("/heartbeat", { fingerprint: "never-activated" })),
    ...Array.from({ length: 5 }, () => client("/deactivate", { fingerprint: "never-activated" }))
  ])
  // Straight away: the last batch cannot have been written yet (the writer runs every 250 ms).
  server.child.kill("SIGTERM")
  const answers = [...seats, ...burst]
  expect(answers.filter((a) => a.status >= 500)).toEqual([])
  expect(answers.filter((a) => a.code === "machine_limit_exceeded")).toHaveLength(10)
  expect(answers.filter((a) => a.code === "machine_not_found")).toHaveLength(10)

  expect(await exitWithin(server, 30_000)).toBe(0)

  const reopened = await Effect.runPromise(
    Effect.gen(function*() {
      const log = yield* Ports.ActivityLog
      const stored = yield* (yield* Ports.LicenseRepository).findByKey(key)
      const machines = yield* (yield* Ports.MachineRepository).listActive(license.id)
      return {
        all: yield* log.count({}),
        forLicense: yield* log.count({ licenseId: license.id }),
        license: stored?.id,
        machines: machines.map((m) => m.fingerprint).sort()
      }
    }).pipe(Effect.provide(layerPgliteStore({ dataDir })))
  )
  expect(reopened.license).toBe(license.id)
  expect(reopened.machines).toEqual(["seat-1", "seat-2"])
  expect(reopened.all, "events in the log (one per client call)").toBe(answers.length)
  expect(reopened.forLicense, "events recorded against the license").toBe(answers.length)
}, 180_000)
