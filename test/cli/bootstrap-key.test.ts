/**
 * The `LM_BOOTSTRAP_*` key can be revoked (CONTRACT §2, §11): `lm serve` on a PGlite data folder with bootstrap
 * credentials; an administrator makes their own read_write key with them and deletes the bootstrap key; after a
 * restart on the same folder with the same settings the bootstrap credentials stay refused, and the server says
 * why in one line.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { basic } from "../../packages/http/test/support/Management.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "../http/support/Child.js"

const dataDir = mkdtempSync(join(tmpdir(), "lm-bootstrap-"))
const bootstrap = { key: `ck_${"5e".repeat(20)}`, secret: `cs_${"7a".repeat(20)}` }
const env = {
  LM_DATA_DIR: dataDir,
  PORT: "0",
  HOST: "127.0.0.1",
  LM_SWEEP_INTERVAL: "0",
  LM_RATE_LIMIT: "off",
  LM_SIGNING_KEY: "",
  LM_BOOTSTRAP_CONSUMER_KEY: bootstrap.key,
  LM_BOOTSTRAP_CONSUMER_SECRET: bootstrap.secret
}
const notRestored = /bootstrap key not restored/g

let server: ServerProcess | undefined

/** Starts `lm serve` on the folder; resolves with the API base. */
const start = async () => {
  server = spawnServer(env)
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

const call = (base: string, method: string, path: string, auth: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }))

it("does not bring back a bootstrap key an administrator deleted once they have their own read_write key", async () => {
  const bootAuth = basic(bootstrap.key, bootstrap.secret)
  let base = await start()
  const created = await call(base, "POST", "/api-keys", bootAuth, { scope: "read_write", description: "admin" })
  expect(created.status).toBe(201)
  const adminAuth = basic(created.body.data.consumer_key, created.body.data.consumer_secret)
  const listed = await call(base, "GET", "/api-keys?per_page=100", adminAuth)
  const bootId = listed.body.data.api_keys.find((k: any) => k.truncated_key === `\u2026${bootstrap.key.slice(-7)}`).id
  expect((await call(base, "DELETE", `/api-keys/${bootId}`, adminAuth)).status).toBe(200)
  expect((await call(base, "GET", "/licenses", bootAuth)).status).toBe(401)
  expect(server!.output().match(notRestored)).toBeNull()
  await stop()

  base = await start()
  const refused = await call(base, "GET", "/licenses", bootAuth)
  expect(refused.status).toBe(401)
  expect(refused.body.code).toBe("rest_unauthorized")
  expect((await call(base, "GET", "/licenses", adminAuth)).status).toBe(200)
  expect(server!.output().match(notRestored)).toHaveLength(1)
  await stop()
}, 240_000)
