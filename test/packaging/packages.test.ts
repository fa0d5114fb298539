/**
 * The libraries install and run outside this repository, as a user gets them: each is packed with `npm pack` (its
 * `prepack` builds it), the tarballs are installed with plain npm into empty folders under the system's temporary
 * folder, and there, on the project's Node 24, the README's embedding example runs on the memory store and on
 * embedded PGlite, and the client's quick start runs against a real server. The client installed on its own pulls
 * in no server dependency.
 */
import { execFile } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "../../packages/http/test/support/App.js"

const run = promisify(execFile)
const root = join(import.meta.dirname, "..", "..")
const libraries = ["domain", "storage-memory", "storage-pg", "api", "http", "client"] as const
type Library = (typeof libraries)[number]

/** What `npm pack --json` says of a tarball. */
interface Packed {
  readonly filename: string
  readonly files: ReadonlyArray<{ readonly path: string }>
}

let work: string
const packed = new Map<Library, Packed>()
const tarball = (library: Library) => join(work, "tarballs", packed.get(library)!.filename)

/** A new folder with an empty application's package.json. */
const application = (name: string) => {
  const dir = join(work, name)
  mkdirSync(dir)
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }))
  return dir
}

/** Plain `npm install` of tarballs, from the local npm cache where it has the dependencies. */
const install = (dir: string, tarballs: ReadonlyArray<string>) =>
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...tarballs], { cwd: dir, timeout: 240_000 })

/** The packages an install put in `node_modules`, by name. */
const installed = (dir: string): Array<string> => {
  const lock = JSON.parse(readFileSync(join(dir, "node_modules", ".package-lock.json"), "utf8")) as {
    readonly packages: Record<string, unknown>
  }
  return Object.keys(lock.packages).map((path) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)).sort()
}

/** Runs a program with the project's Node 24 in `dir`; resolves with its stdout. */
const node = async (dir: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  (await run(process.execPath, args, { cwd: dir, env: { ...process.env, ...env }, timeout: 120_000 })).stdout

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "lm-packages-"))
  mkdirSync(join(work, "tarballs"))
  // One npm for the six (each workspace's `prepack` still builds it): one npm start instead of six.
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", join(work, "tarballs"), ...libraries.flatMap((library) => ["-w", `packages/${library}`])], {
    cwd: root,
    timeout: 240_000
  })
  const tarballs = JSON.parse(stdout) as ReadonlyArray<Packed & { readonly name: string }>
  for (const library of libraries) packed.set(library, tarballs.find((tarball) => tarball.name === `@lm/${library}`)!)
  expect([...packed.values()].every((tarball) => tarball !== undefined)).toBe(true)
}, 600_000)

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe("npm pack", () => {
  it.each(libraries)("@lm/%s holds dist/ with declarations, README.md and LICENSE, and no tests or sources", (library) => {
    const manifest = JSON.parse(readFileSync(join(root, "packages", library, "package.json"), "utf8"))
    const files = packed.get(library)!.files.map((file) => file.path)
    expect(manifest.private).toBeUndefined()
    expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts"]))
    const others = files.filter((file) => !["package.json", "README.md", "LICENSE"].includes(file))
    expect(others.filter((file) => !/^dist\/.+\.(?:d\.ts|js)$/.test(file))).toEqual([])
    // Every module comes from a source of today (no output of a file since moved or deleted).
    const sources = others.filter((file) => file.endsWith(".js")).map((file) => file.replace(/^dist\/(.+)\.js$/, "src/$1.ts"))
    expect(sources.filter((source) => !existsSync(join(root, "packages", library, source)))).toEqual([])
    // Every entry point the package exports is in it.
    const targets = Object.values(manifest.exports as Record<string, { types: string; default: string }>)
      .flatMap((entry) => [entry.types, entry.default].map((path) => path.replace(/^\.\//, "")))
    expect(targets.filter((target) => !files.includes(target))).toEqual([])
  })
})

describe("an embedder", () => {
  it("installs @lm/domain and the stores with npm and runs the README's example on memory and on PGlite", async () => {
    const dir = application("embedder")
    await install(dir, [tarball("domain"), tarball("storage-memory"), tarball("storage-pg")])
    copyFileSync(join(root, "examples", "embedding.ts"), join(dir, "embedding.ts"))
    expect((await node(dir, ["embedding.ts"])).trim()).toBe("valid")
    // On PGlite in a data folder, twice: the second run opens the store the first one made.
    const masterKey = { LM_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }
    expect((await node(dir, ["embedding.ts", "./licensing-data"], masterKey)).trim()).toBe("valid")
    expect((await node(dir, ["embedding.ts", "./licensing-data"], masterKey)).trim()).toBe("valid")
    // The declarations type-check the example as TypeScript sees the installed packages.
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        module: "nodenext",
        target: "es2023",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        typeRoots: [join(root, "node_modules", "@types")],
        types: ["node"]
      },
      files: ["embedding.ts"]
    }))
    await run(join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], { cwd: dir, timeout: 120_000 })
  }, 600_000)
})

describe("a licensed application", () => {
  let server: TestApp
  beforeAll(async () => {
    server = await startApp("memory")
  }, 120_000)
  afterAll(() => server?.close())

  it("installs @lm/client without any server dependency and runs the README's quick start against a server", async () => {
    const dir = application("licensed-app")
    await install(dir, [tarball("client"), tarball("api"), tarball("domain")])
    // The whole install: no AWS SDK, Redis, PGlite, busboy, @effect/sql-pg or @effect/platform-node.
    expect(installed(dir)).toEqual(["@lm/api", "@lm/client", "@lm/domain", "@noble/ed25519", "effect", "semver"])

    const license = await server.call("POST", "/licenses", { body: { max_activations: 1, product_id: 7 } })
    const key: string = license.body.data.license_key
    const trustedKeys = (await server.call("GET", "/public-key", { auth: null })).body.data.keys.map((k: { public_key: string }) => k.public_key)
    const readme = readFileSync(join(root, "packages", "client", "README.md"), "utf8")
    const quickStart = /## Quick start: a desktop app \(Node\)\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    expect(quickStart).toBeDefined()
    // The README's snippet with this server, license and keys, and a state file here instead of the home folder.
    const program = [
      `const userKey = ${JSON.stringify(key)}`,
      `const lockOut = (code) => console.log("locked out", code)`,
      quickStart!
        .replace(`"https://licensing.example.com"`, JSON.stringify(server.origin))
        .replace(`["VULHouOysYIcBUtup/f0ixhAHi/Mt3geZQa6VYw1alY="]`, JSON.stringify(trustedKeys))
        .replace("`${homedir()}/.my-app/license.json`", JSON.stringify(join(dir, "license.json"))),
      `console.log("entitled", (await app.entitlement()).entitled)`,
      `beat.stop()`,
      `await app.shutdown()`
    ].join("\n")
    writeFileSync(join(dir, "quick-start.mjs"), program)
    expect(await node(dir, ["quick-start.mjs"])).toContain("entitled true")
    const machines = await server.call("GET", `/licenses/${key}/machines`)
    expect(machines.body.data.machines).toMatchObject([{ status: "inactive", deactivation_reason: "client" }])
  }, 600_000)
})
