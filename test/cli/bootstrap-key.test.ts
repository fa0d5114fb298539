/**
 * The bootstrap key of CONTRACT §2 (issue 27): `LM_BOOTSTRAP_CONSUMER_*` is ensured at every start whatever other
 * keys the store holds, so the README's restart with a bootstrap key on an existing `./data` works, and several
 * servers with different bootstrap keys on one PostgreSQL each get theirs. A key an administrator deleted through
 * the API is never restored, and the start says so in one line naming it truncated.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { basic } from "../../packages/http/test/support/Management.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "../http/support/Child.js"
import { migratedPgliteFolder } from "../http/support/PgliteFolder.js"
import { type PgServers, startPgServers } from "../http/support/PgServers.js"
import { serviceUrl } from "../support/services.js"

const dataDir = mkdtempSync(join(tmpdir(), "lm-bootstrap-"))
const keyA = { key: `ck_${"5e".repeat(20)}`, secret: `cs_${"7a".repeat(20)}` }
const keyB = { key: `ck_${"6f".repeat(20)}`, secret: `cs_${"8b".repeat(20)}` }
const env = { LM_DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", LM_SWEEP_INTERVAL: "0", LM_SIGNING_KEY: "" }
const bootstrapEnv = (k: typeof keyA) => ({ LM_BOOTSTRAP_CONSUMER_KEY: k.key, LM_BOOTSTRAP_CONSUMER_SECRET: k.secret })
const notRestored = /bootstrap key not restored: (\S+) was deleted/g
const auth = (k: typeof keyA) => basic(k.key, k.secret)

let server: ServerProcess | undefined
// The folder starts migrated: the first start skips initdb and the migrations.
beforeAll(() => migratedPgliteFolder(dataDir), 120_000)

/** Starts `lm serve` on the folder; resolves with the API base. */
const start = async (extra: Readonly<Record<string, string>> = {}) => {
  server = spawnServer({ ...env, ...extra })
  return (await waitForOutput(server, /Listening on (http:\/\/\S+)/))[1]!
}

/** Stops the server and waits for a clean exit. */
const stop = async () => {
  server!.child.kill("SIGTERM")
  expect(await exitWithin(server!, 30_000)).toBe(0)
}

afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill("SIGKILL")
    await server.exited
  }
  rmSync(dataDir, { recursive: true, force: true })
})

const call = (base: string, method: string, path: string, authorization: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }))

it("ensures a new bootstrap key on an existing PGlite folder, and never restores one deleted through the API", async () => {
  // First start without settings: the printed key (the README's first `npm start`).
  let base = await start()
  const [, printedKey, printedSecret] = await waitForOutput(server!, /bootstrap api key: consumer_key=(\S+) consumer_secret=(\S+)/)
  const printed = basic(printedKey!, printedSecret!)
  await stop()

  // A restart with a bootstrap key on the same folder: it works, and so does the key made before.
  base = await start(bootstrapEnv(keyA))
  expect((await call(base, "GET", "/licenses", auth(keyA))).status).toBe(200)
  expect((await call(base, "GET", "/licenses", printed)).status).toBe(200)
  const listed = await call(base, "GET", "/api-keys?per_page=100", printed)
  const idA = listed.body.data.api_keys.find((k: any) => k.truncated_key === `\u2026${keyA.key.slice(-7)}`).id
  expect((await call(base, "DELETE", `/api-keys/${idA}`, printed)).status).toBe(200)
  expect((await call(base, "GET", "/licenses", auth(keyA))).status).toBe(401)
  expect(server!.output().match(notRestored)).toBeNull()
  await stop()

  // Deleted through the API: a restart with it configured does not bring it back, and says so once.
  base = await start(bootstrapEnv(keyA))
  const refused = await call(base, "GET", "/licenses", auth(keyA))
  expect([refused.status, refused.body.code]).toEqual([401, "rest_unauthorized"])
  expect((await call(base, "GET", "/licenses", printed)).status).toBe(200)
  expect([...server!.output().matchAll(notRestored)].map((m) => m[1])).toEqual([`\u2026${keyA.key.slice(-7)}`])
  await stop()
}, 240_000)

const url = serviceUrl("DATABASE_URL")

// Two processes cannot share PGlite: this needs a PostgreSQL server (DATABASE_URL; CI sets it).
describe.skipIf(url === "")("bootstrap keys on one PostgreSQL (DATABASE_URL)", () => {
  let started: PgServers | undefined
  afterAll(() => started?.close(), 60_000)

  it("two servers started with different bootstrap keys each accept theirs", async () => {
    started = await startPgServers(url, "lm_bootstrap_keys", ["A", "B"], (name) => bootstrapEnv(name === "A" ? keyA : keyB))
    for (const s of started.servers) {
      for (const k of [keyA, keyB]) {
        expect((await call(s.base, "GET", "/licenses", auth(k))).status, `${k.key} on server ${s.name}`).toBe(200)
      }
    }
  }, 120_000)
})
