/**
 * The arrows of DESIGN.md point one way: `http -> domain <- storage-*`. The domain imports nothing but effect,
 * @noble/ed25519, node:crypto, node:net (its BlockList judges the addresses a webhook may reach) and semver (release
 * versions); storage packages never import the HTTP adapter; the client verify module
 * imports nothing but @noble/ed25519.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")

const sources = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : []
  })

/** Every module specifier a file imports or re-exports (static and dynamic). */
const importsOf = (file: string, options: { readonly runtimeOnly?: boolean } = {}): Array<string> => {
  const source = readFileSync(file, "utf8")
  // `import type` is erased at compile time: it loads nothing at run time.
  const text = options.runtimeOnly === true ? source.replace(/(?:import|export)\s+type\s[^;]*?from\s*["'][^"']+["']/g, "") : source
  const found = new Set<string>()
  for (const match of text.matchAll(/(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g)) {
    found.add(match[1] ?? match[2] ?? match[3]!)
  }
  return [...found]
}

const offending = (dir: string, allowed: (specifier: string) => boolean) =>
  sources(join(root, dir)).flatMap((file) =>
    importsOf(file).filter((s) => !s.startsWith(".") && !allowed(s)).map((s) => `${relative(root, file)} imports ${s}`)
  )

describe("layering", () => {
  it("finds the imports it checks (the scanner works)", () => {
    expect(importsOf(join(root, "packages/domain/src/licensing/Licensing.ts"))).toContain("effect")
    expect(importsOf(join(root, "packages/http/src/server/App.ts"))).toContain("@lm/storage-pg")
  })

  it("the domain imports only effect, @noble/ed25519, node:crypto, node:net and semver", () => {
    const allowed = new Set(["effect", "@noble/ed25519", "node:crypto", "node:net", "semver"])
    expect(offending("packages/domain/src", (s) => allowed.has(s) || s.startsWith("effect/"))).toEqual([])
  })

  it("the verify module imports only @noble/ed25519 (it runs in client software and browsers)", () => {
    expect(offending("packages/domain/src/verify", (s) => s === "@noble/ed25519")).toEqual([])
  })

  it("storage packages never import the HTTP adapter", () => {
    for (const pkg of ["packages/storage-memory/src", "packages/storage-pg/src"]) {
      expect(offending(pkg, (s) => !s.startsWith("@lm/http"))).toEqual([])
    }
  })

  it("the client's main entry reaches no node: module, through the API definition and the domain alike", () => {
    const entries: Record<string, string> = {
      "@lm/client": "packages/client/src/index.ts",
      "@lm/http/api": "packages/http/src/api/index.ts",
      "@lm/domain/core": "packages/domain/src/core.ts",
      "@lm/domain/verify": "packages/domain/src/verify/index.ts"
    }
    const seen = new Set<string>()
    const reached: Array<string> = []
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const specifier of importsOf(file, { runtimeOnly: true })) {
        if (specifier.startsWith(".")) visit(join(dirname(file), specifier.replace(/\.js$/, ".ts")))
        else if (specifier.startsWith("@lm/")) {
          const entry = entries[specifier]
          if (entry === undefined) reached.push(`${relative(root, file)} imports ${specifier}, which is not a browser-safe entry`)
          else visit(join(root, entry))
        } else if (specifier.startsWith("node:")) reached.push(`${relative(root, file)} imports ${specifier}`)
      }
    }
    visit(join(root, entries["@lm/client"]!))
    expect(seen).toContain(join(root, "packages/http/src/api/Api.ts"))
    expect(reached).toEqual([])
  })
})
