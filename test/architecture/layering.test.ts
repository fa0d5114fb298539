/**
 * The arrows of DESIGN.md point one way: `http -> domain <- storage-*`. The domain imports nothing but effect,
 * @noble/ed25519, node:crypto, node:net (its BlockList judges the addresses a webhook may reach) and semver (release
 * versions); storage packages never import the HTTP adapter; the client verify module
 * imports nothing but @noble/ed25519. Inside the domain, the feature folders import one another without a circle,
 * `shared/` imports no feature, and no feature imports the modules that compose them (the barrels, `Engine.ts`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, sep } from "node:path"
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

const domainSrc = join(root, "packages/domain/src")

/** The folder of the domain a file is in (`licensing`, `shared`, ...), or "" for the modules at the top. */
const folderOf = (file: string): string => {
  const parts = relative(domainSrc, file).split(sep)
  return parts.length > 1 ? parts[0]! : ""
}

/** The domain's feature folders: every folder but `shared/` and `verify/`. */
const features = readdirSync(domainSrc).filter((name) =>
  statSync(join(domainSrc, name)).isDirectory() && name !== "shared" && name !== "verify"
)

/** For each file of a domain folder, the domain files its relative imports name (types included). */
const domainImports = (folder: string): Array<{ readonly file: string; readonly target: string }> =>
  sources(join(domainSrc, folder)).flatMap((file) =>
    importsOf(file).filter((s) => s.startsWith(".")).map((s) => ({ file, target: join(dirname(file), s.replace(/\.js$/, ".ts")) }))
  )

/** A circle of feature folders importing one another (["a", "b", "a"]), or undefined when there is none. */
const findCircle = (edges: ReadonlyMap<string, ReadonlySet<string>>): Array<string> | undefined => {
  const done = new Set<string>()
  const path: Array<string> = []
  const visit = (node: string): Array<string> | undefined => {
    const at = path.indexOf(node)
    if (at >= 0) return [...path.slice(at), node]
    if (done.has(node)) return undefined
    path.push(node)
    for (const next of edges.get(node) ?? []) {
      const circle = visit(next)
      if (circle !== undefined) return circle
    }
    path.pop()
    done.add(node)
    return undefined
  }
  for (const node of edges.keys()) {
    const circle = visit(node)
    if (circle !== undefined) return circle
  }
  return undefined
}

describe("layering", () => {
  it("finds the imports it checks (the scanner works)", () => {
    expect(importsOf(join(root, "packages/domain/src/licensing/Licensing.ts"))).toContain("effect")
    expect(importsOf(join(root, "packages/http/src/server/App.ts"))).toContain("@lm/storage-pg")
  })

  it("the domain imports only effect, @noble/ed25519, node:crypto, node:net and semver", () => {
    const allowed = new Set(["effect", "@noble/ed25519", "node:crypto", "node:net", "semver"])
    expect(offending("packages/domain/src", (s) => allowed.has(s) || s.startsWith("effect/"))).toEqual([])
  })

  it("finds the domain's feature folders and the imports between them (the scanner works)", () => {
    expect(features).toEqual(expect.arrayContaining(["licensing", "subscriptions", "webhooks"]))
    expect(domainImports("subscriptions").map(({ target }) => folderOf(target))).toContain("licensing")
    expect(findCircle(new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set(["a"])]]))).toEqual(["a", "b", "c", "a"])
    expect(findCircle(new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set()]]))).toBeUndefined()
  })

  it("no domain feature folder imports another in a circle (types included)", () => {
    const edges = new Map(features.map((feature) => [
      feature,
      new Set(domainImports(feature).map(({ target }) => folderOf(target)).filter((to) => features.includes(to) && to !== feature))
    ]))
    expect(findCircle(edges)).toBeUndefined()
  })

  it("the domain's shared/ imports no feature, and no feature imports the modules at the top (barrels, Engine.ts)", () => {
    const outside = (folder: string, allowed: (to: string) => boolean) =>
      domainImports(folder)
        .filter(({ target }) => !allowed(folderOf(target)))
        .map(({ file, target }) => `${relative(root, file)} imports ${relative(root, target)}`)
    expect(outside("shared", (to) => to === "shared")).toEqual([])
    for (const feature of features) expect(outside(feature, (to) => to !== "")).toEqual([])
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

  it("the console imports the API definition in one module (src/api.ts), and no node: module", () => {
    const files = (dir: string): Array<string> =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name)
        return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(path) ? [path] : []
      })
    const consoleFiles = files(join(root, "apps/console/src"))
    const importers = (test: (specifier: string) => boolean) =>
      consoleFiles.filter((file) => importsOf(file).some(test)).map((file) => relative(root, file))
    expect(consoleFiles.length).toBeGreaterThan(5)
    expect(importers((s) => s.startsWith("@lm/http") || s === "@lm/api")).toEqual(["apps/console/src/api.ts"])
    expect(importers((s) => s.startsWith("node:"))).toEqual([])
  })
})
