/**
 * A start refused for a setting (CONTRACT §13): `lm serve` exits non-zero and says why on stderr in one line that
 * names the setting, without a stack trace, whichever way the setting is wrong: a value the settings reader
 * refuses, one Effect's `Config` cannot read, TLS files, the master key, the bootstrap key, the store, Redis, the
 * data folder, the port.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { exitWithin, spawnServer } from "../http/support/Child.js"

const dir = mkdtempSync(join(tmpdir(), "lm-refusals-"))
const notPem = join(dir, "not.pem")
writeFileSync(notPem, "not a certificate\n")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs `lm serve` with `env` on the memory store unless `env` picks another; resolves once it has exited. */
const refused = async (env: Record<string, string>) => {
  const server = spawnServer({ LM_STORAGE: "memory", PORT: "0", HOST: "127.0.0.1", LM_SWEEP_INTERVAL: "0", ...env })
  const closed = new Promise((resolve) => server.child.once("close", resolve))
  try {
    const code = await exitWithin(server, 60_000)
    await closed
    return { code, stderr: server.stderr(), output: server.output() }
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  }
}

const bootstrapSecret = `cs_${"7a".repeat(20)}`

it.each([
  ["LM_MAX_CONNECTIONS", { LM_MAX_CONNECTIONS: "many" }],
  ["LM_OFFLINE_TTL", { LM_OFFLINE_TTL: "a week" }],
  ["LM_TLS_CERT", { LM_TLS_CERT: notPem, LM_TLS_KEY: notPem }],
  ["LM_MASTER_KEY", { LM_MASTER_KEY: "short" }],
  ["LM_MASTER_KEY_FILE", { LM_MASTER_KEY_FILE: join(dir, "missing.key") }],
  ["LM_BOOTSTRAP_CONSUMER_KEY", { LM_BOOTSTRAP_CONSUMER_KEY: "ck_not-a-key", LM_BOOTSTRAP_CONSUMER_SECRET: bootstrapSecret }],
  ["LM_REDIS_URL", { LM_REDIS_URL: "localhost:6379" }],
  ["LM_DATA_DIR", { LM_STORAGE: "", LM_DATA_DIR: join(notPem, "data") }],
  ["DATABASE_URL", { LM_STORAGE: "", DATABASE_URL: "postgres://postgres@127.0.0.1:1/postgres" }],
  ["LM_WORKERS", { LM_WORKERS: "several" }],
  // With LM_WORKERS, a worker's refused start is the start's: its one line, exit 1.
  ["DATABASE_URL", { LM_STORAGE: "", DATABASE_URL: "postgres://postgres@127.0.0.1:1/postgres", LM_WORKERS: "2" }]
])("a bad %s refuses the start in one line naming it, without a stack", async (name, env) => {
  const { code, stderr, output } = await refused(env)
  expect(code, output).toBe(1)
  expect(stderr.trimEnd().split("\n"), output).toHaveLength(1)
  expect(stderr).toMatch(new RegExp(`^${name}\\b`))
  expect(output).not.toMatch(/^\s+at /m)
  expect(output).not.toMatch(/Listening on/)
}, 90_000)

it.each([
  ["PORT", "PORT, HOST"],
  // The metrics listener of a lone server listens on a thread of its own (MetricsListener.ts): its refusal too.
  ["LM_METRICS_PORT", "LM_METRICS_PORT, HOST"]
])("a port in use for %s refuses the start in one line naming it, without a stack", async (setting, named) => {
  const taken = net.createServer()
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
  try {
    const { code, stderr, output } = await refused({ [setting]: String((taken.address() as net.AddressInfo).port) })
    expect(code, output).toBe(1)
    expect(stderr.trimEnd().split("\n"), output).toHaveLength(1)
    expect(stderr.startsWith(`${named}: cannot listen on 127.0.0.1:`), stderr).toBe(true)
    expect(stderr).toMatch(/:\d+ \(EADDRINUSE\)/)
    expect(output).not.toMatch(/^\s+at /m)
    expect(output).not.toMatch(/Listening on/)
  } finally {
    await new Promise((resolve) => taken.close(resolve))
  }
}, 90_000)

it.each([
  ["memory", { LM_WORKERS: "2" }, /^LM_WORKERS=2: several server processes need PostgreSQL; each process would keep a memory store of its own/],
  ["PGlite", { LM_STORAGE: "", LM_DATA_DIR: join(dir, "data"), LM_WORKERS: "3" }, /^LM_WORKERS=3: several server processes need PostgreSQL; a PGlite data folder \(LM_DATA_DIR\) opens in one process only/]
])("LM_WORKERS above 1 on %s refuses the start, saying why", async (_store, env, expected) => {
  const { code, stderr, output } = await refused(env)
  expect(code, output).toBe(1)
  expect(stderr.trimEnd().split("\n"), output).toHaveLength(1)
  expect(stderr).toMatch(expected)
  expect(output).not.toMatch(/Listening on/)
}, 90_000)
