/**
 * The files of `examples/` run as their headers say (issue 27): from the project folder, with `npx node` (the
 * project's Node.js, even when the shell's `node` is older), on the built packages (`npm test` builds first). The
 * README's embedding example is `examples/embedding.ts` word for word (`npm test` type-checks it: it is in
 * tsconfig.test.json). `licensed-app.ts` against a live server: test/client/example.test.ts.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..")
const header = (file: string) => readFileSync(join(root, "examples", file), "utf8").split("\n").filter((line) => line.startsWith("//")).join("\n")

/** A user's shell: the system's tools first, not the project's `node_modules/.bin`. */
const userPath = ["/usr/local/bin", "/usr/bin", "/bin"].join(":")
const npx = ["/usr/local/bin/npx", "/usr/bin/npx"].find(existsSync)

/** `npx node <args>` from the project folder, as a user types it; its exit code and output. */
const npxNode = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  promisify(execFile)(npx!, ["node", ...args], { cwd: root, timeout: 120_000, env: { ...process.env, PATH: userPath, ...env } })
    .then(({ stdout }) => ({ code: 0, stdout }), (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }))

describe("the examples", () => {
  it("embedding.ts is the README's embedding example", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
    expect(blocks).toContain(readFileSync(join(root, "examples", "embedding.ts"), "utf8"))
  })

  it.skipIf(npx === undefined)("embedding.ts runs as its header says, on memory and in a data folder", { timeout: 300_000 }, async () => {
    expect(header("embedding.ts")).toContain("`npx node examples/embedding.ts`")
    expect(header("embedding.ts")).toContain("`LM_MASTER_KEY=... npx node examples/embedding.ts ./licensing-data`")
    expect(await npxNode(["examples/embedding.ts"])).toEqual({ code: 0, stdout: "valid\n" })
    const dir = mkdtempSync(join(tmpdir(), "lm-embedding-"))
    try {
      const env = { LM_MASTER_KEY: Buffer.alloc(32, 9).toString("base64") }
      // Twice on the same folder: the second run opens what the first kept.
      for (let run = 0; run < 2; run++) expect(await npxNode(["examples/embedding.ts", join(dir, "data")], env)).toEqual({ code: 0, stdout: "valid\n" })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.skipIf(npx === undefined)("licensed-app.ts starts as its header says and, with no server, says it is not entitled", { timeout: 120_000 }, async () => {
    expect(header("licensed-app.ts")).toContain("npx node examples/licensed-app.ts")
    const dir = mkdtempSync(join(tmpdir(), "lm-licensed-app-"))
    try {
      const ran = await npxNode(["examples/licensed-app.ts"], {
        LM_URL: "http://127.0.0.1:1",
        LM_TRUSTED_KEYS: Buffer.alloc(32, 1).toString("base64"),
        LM_PRODUCT_ID: "1",
        LM_LICENSE_KEY: "AAAA-BBBB-CCCC-DDDD",
        LM_STATE_FILE: join(dir, "license.json")
      })
      expect(ran).toEqual({ code: 1, stdout: "online check failed: network_error\nnot entitled: no_token\n" })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
