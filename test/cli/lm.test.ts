/**
 * The `lm` command line (CONTRACT §13) on a PGlite data folder, then `lm serve` on the same folder: API keys made
 * by the CLI authenticate with their scope, and rotated signing keys stay published. Runs the built binary
 * (`npm test` builds first).
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { builtLm } from "../support/built.js"
import { afterAll, describe, expect, it } from "vitest"

const bin = builtLm()
const dataDir = mkdtempSync(join(tmpdir(), "lm-cli-"))
const env: NodeJS.ProcessEnv = { ...process.env, LM_DATA_DIR: dataDir, DATABASE_URL: "", LM_STORAGE: "", LM_SIGNING_KEY: "" }
delete env.LM_BOOTSTRAP_CONSUMER_KEY
delete env.LM_BOOTSTRAP_CONSUMER_SECRET

const lm = (...args: Array<string>) => {
  const run = spawnSync(process.execPath, [bin, ...args], { env, encoding: "utf8", timeout: 120_000 })
  return { code: run.status, out: run.stdout, err: run.stderr }
}

/** Runs `lm serve` on the folder for `use`, given the API base; stops it afterwards. */
const serving = async <A>(use: (base: string) => Promise<A>): Promise<A> => {
  const server = spawn(process.execPath, [bin, "serve"], { env: { ...env, PORT: "0", LM_SWEEP_INTERVAL: "0" } })
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = ""
      server.stdout.on("data", (chunk) => {
        out += chunk
        const url = /Listening on (http:\/\/\S+)/.exec(out)?.[1]
        if (url) resolve(url)
      })
      server.on("exit", (code) => reject(new Error(`lm serve exited with ${code}: ${out}`)))
    })
    return await use(base)
  } finally {
    server.kill("SIGTERM")
    await new Promise((resolve) => server.once("exit", resolve))
  }
}

afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

// Each step starts Node and opens PGlite (several seconds each on a loaded two-core machine), some twice.
describe("lm", { timeout: 240_000 }, () => {
  let readKey = { key: "", secret: "" }

  it("migrates a new data folder", () => {
    const run = lm("migrate")
    expect(run.code).toBe(0)
    expect(run.out).toContain("migrated: pglite")
  })

  it("creates API keys and shows the secret once; lists them without it", () => {
    const created = lm("api-keys", "create", "--scope", "read", "--description", "reporting")
    expect(created.code).toBe(0)
    const key = /consumer_key=(ck_[0-9a-f]{40})/.exec(created.out)?.[1]
    const secret = /consumer_secret=(cs_[0-9a-f]{40})/.exec(created.out)?.[1]
    expect(key).toBeDefined()
    expect(secret).toBeDefined()
    readKey = { key: key!, secret: secret! }
    const listed = lm("api-keys", "list")
    expect(listed.code).toBe(0)
    expect(listed.out).toMatch(new RegExp(`\\s+read\\s+\u2026${key!.slice(-7)}\\s+reporting\\s`))
    expect(listed.out).not.toContain(secret!)
  })

  it("refuses an unknown scope or command with a usage message and exit code 2", () => {
    const bad = lm("api-keys", "create", "--scope", "admin")
    expect(bad.code).toBe(2)
    expect(bad.err).toContain('Invalid value for flag --scope: "admin". Expected: "read" | "write" | "read_write"')
    const unknown = lm("frobnicate")
    expect(unknown.code).toBe(2)
    expect(unknown.err).toContain('Unknown subcommand "frobnicate" for "lm"')
    expect(unknown.out).toContain("USAGE")
  })

  it("rotates signing keys; lm serve then publishes every key, the newest current", async () => {
    expect(lm("signing-keys", "rotate").code).toBe(0)
    const second = lm("signing-keys", "rotate")
    expect(second.code).toBe(0)
    const kid = /kid=([0-9a-f]+)/.exec(second.out)?.[1]

    await serving(async (base) => {
      // The store had keys already: no bootstrap key is printed.
      const keys = (await (await fetch(`${base}/public-key`)).json()) as any
      expect(keys.data.kid).toBe(kid)
      expect(keys.data.keys).toHaveLength(3)
      expect(keys.data.keys.filter((k: any) => k.current).map((k: any) => k.kid)).toEqual([kid])

      const auth = `Basic ${Buffer.from(`${readKey.key}:${readKey.secret}`).toString("base64")}`
      expect((await fetch(`${base}/licenses`, { headers: { authorization: auth } })).status).toBe(200)
      const write = await fetch(`${base}/licenses`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: "{}" })
      expect(write.status).toBe(403)
      // The commands' writes on the store are in the audit log, with actor cli.
      const audit = (await (await fetch(`${base}/audit-log?actor=cli`, { headers: { authorization: auth } })).json()) as any
      expect(audit.data.entries.map((e: any) => [e.action, e.target.type, e.status, e.actor])).toEqual([
        ["signing_key.rotate", "signing_key", 200, { type: "cli", api_key_id: null, truncated_key: null }],
        ["signing_key.rotate", "signing_key", 200, { type: "cli", api_key_id: null, truncated_key: null }],
        ["api_key.create", "api_key", 201, { type: "cli", api_key_id: null, truncated_key: null }]
      ])
      expect(audit.data.entries[0].target.id).toBe(kid)
    })
  })

  it("retires an old signing key: lm serve no longer publishes it; the current key cannot be retired", async () => {
    const listed = () => serving(async (base) => ((await (await fetch(`${base}/public-key`)).json()) as any).data)
    const before = await listed()
    const old = before.keys.find((k: any) => !k.current).kid
    const current = lm("signing-keys", "retire", before.kid)
    expect(current.code).toBe(1)
    expect(current.err.trim().split("\n")).toHaveLength(1)
    expect(current.err).toContain("rotate first")
    const retired = lm("signing-keys", "retire", old)
    expect(retired.code).toBe(0)
    const after = await listed()
    expect(after.keys.map((k: any) => k.kid)).not.toContain(old)
    expect(after.keys).toHaveLength(before.keys.length - 1)
  })

  it("keeps the data folder private: folder 0700, master key 0600, no file open to other users", () => {
    expect(statSync(dataDir).mode & 0o777).toBe(0o700)
    const keyFile = join(dataDir, "master.key")
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    const open: Array<string> = []
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if ((statSync(path).mode & 0o077) !== 0) open.push(path)
        if (entry.isDirectory()) walk(path)
      }
    }
    walk(dataDir)
    expect(open).toEqual([])
    // The key file holds the base64 of 32 random bytes (the seed in the store is sealed with it: secrets.test.ts).
    expect(readFileSync(keyFile, "utf8").trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/)
  })

  it("refuses to start with another master key, naming the setting", () => {
    const other = spawnSync(process.execPath, [bin, "api-keys", "list"], {
      env: { ...env, LM_MASTER_KEY: Buffer.alloc(32, 3).toString("base64") },
      encoding: "utf8",
      timeout: 120_000
    })
    expect(other.status).not.toBe(0)
    expect(`${other.stdout}${other.stderr}`).toContain("LM_MASTER_KEY")
  })
})
