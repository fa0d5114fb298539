/**
 * The arrows of DESIGN.md point one way: `apps -> http -> api -> domain <- storage-*`, `client -> api`. The domain
 * imports nothing but effect, @noble/ed25519, node:crypto, node:net (its BlockList judges the addresses a webhook
 * may reach) and semver (release versions); the verify module nothing but @noble/ed25519; `@lm/api` nothing but
 * effect and the domain's browser-safe core; only `apps/server` picks a store package; what `@lm/api` and the
 * client's main entry reach loads no node: module (they run in browsers); the browser console (`apps/console`)
 * imports the API definition in one module and no node: module; and no module of a package imports itself
 * through others (no import cycle). Inside the domain, the feature folders import one another without a circle,
 * `shared/` imports no feature, and no feature imports the modules that compose them (the barrels, `Engine.ts`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, sep } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")

const sources = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : /\.tsx?$/.test(path) ? [path] : []
  })

/** The source file a relative import of `file` names (`./ui.js` is `ui.ts`, or `ui.tsx` when that is the one). */
const sourceOf = (file: string, specifier: string): string => {
  const path = join(dirname(file), specifier.replace(/\.js$/, ".ts"))
  return existsSync(path) || !existsSync(`${path}x`) ? path : `${path}x`
}

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

/** The non-relative imports of a folder's modules that `allowed` refuses, as `file imports specifier`. */
const offending = (dir: string, allowed: (specifier: string) => boolean, options: { readonly runtimeOnly?: boolean } = {}) =>
  sources(join(root, dir)).flatMap((file) =>
    importsOf(file, options).filter((s) => !s.startsWith(".") && !allowed(s)).map((s) => `${relative(root, file)} imports ${s}`)
  )

/** The workspace packages an import names (`@lm/domain/core` is `@lm/domain`). */
const lmPackage = (specifier: string): string | undefined => /^@lm\/[^/]+/.exec(specifier)?.[0]

/** The source folders of the workspace, by package name. */
const workspaces: Record<string, string> = {
  "@lm/domain": "packages/domain/src",
  "@lm/storage-memory": "packages/storage-memory/src",
  "@lm/storage-pg": "packages/storage-pg/src",
  "@lm/api": "packages/api/src",
  "@lm/http": "packages/http/src",
  "@lm/client": "packages/client/src",
  "@lm/server": "apps/server/src",
  "@lm/console": "apps/console/src"
}

/** The workspace packages each one may import (DESIGN.md's arrows). */
const arrows: Record<string, ReadonlyArray<string>> = {
  "@lm/domain": [],
  "@lm/storage-memory": ["@lm/domain"],
  "@lm/storage-pg": ["@lm/domain"],
  "@lm/api": ["@lm/domain"],
  "@lm/http": ["@lm/api", "@lm/domain"],
  "@lm/client": ["@lm/api", "@lm/domain"],
  "@lm/server": ["@lm/http", "@lm/api", "@lm/domain", "@lm/storage-memory", "@lm/storage-pg"],
  "@lm/console": ["@lm/api", "@lm/domain"]
}

/** The import cycles among a folder's modules (relative imports, type-only ones included), each as a path. */
const cyclesIn = (dir: string): Array<string> => {
  const graph = new Map<string, Array<string>>()
  for (const file of sources(join(root, dir))) {
    graph.set(
      file,
      importsOf(file).filter((s) => s.startsWith(".")).map((s) => sourceOf(file, s))
    )
  }
  const cycles: Array<string> = []
  const state = new Map<string, "visiting" | "done">()
  const path: Array<string> = []
  const visit = (file: string) => {
    state.set(file, "visiting")
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "visiting") {
        cycles.push([...path.slice(path.indexOf(next)), next].map((f) => relative(join(root, dir), f)).join(" -> "))
      } else if (state.get(next) === undefined && graph.has(next)) visit(next)
    }
    path.pop()
    state.set(file, "done")
  }
  for (const file of graph.keys()) if (state.get(file) === undefined) visit(file)
  return cycles
}

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
  it("finds the imports and cycles it checks (the scanner works)", () => {
    expect(importsOf(join(root, "packages/domain/src/licensing/Licensing.ts"))).toContain("effect")
    expect(importsOf(join(root, "apps/server/src/Store.ts"))).toContain("@lm/storage-pg")
    expect(Object.values(workspaces).every((dir) => sources(join(root, dir)).length > 0)).toBe(true)
  })

  it("each package imports only the workspace packages its arrows allow", () => {
    const found = Object.entries(workspaces).flatMap(([pkg, dir]) =>
      offending(dir, (s) => {
        const target = lmPackage(s)
        return target === undefined || target === pkg || arrows[pkg]!.includes(target)
      })
    )
    expect(found).toEqual([])
  })

  it("only apps/server picks a store package", () => {
    const stores = new Set(["@lm/storage-memory", "@lm/storage-pg"])
    const found = Object.entries(workspaces)
      .filter(([pkg]) => pkg !== "@lm/server" && !stores.has(pkg))
      .flatMap(([, dir]) => offending(dir, (s) => !stores.has(lmPackage(s) ?? "")))
    expect(found).toEqual([])
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

  it("@lm/api depends on effect and the domain's browser-safe core only", () => {
    expect(offending("packages/api/src", (s) => s === "effect" || s.startsWith("effect/") || s === "@lm/domain/core")).toEqual([])
  })

  it("@lm/client depends on @lm/api, the domain's verifier and effect only (its node entry also on node: modules)", () => {
    const allowed = (s: string) => s === "effect" || s.startsWith("effect/") || s === "@lm/api" || s === "@lm/domain/verify"
    expect(offending("packages/client/src", (s) => allowed(s) || s.startsWith("node:"))).toEqual([])
    const mainEntry = sources(join(root, "packages/client/src")).filter((file) => !file.includes("/node/"))
    expect(mainEntry.flatMap((file) => importsOf(file).filter((s) => s.startsWith("node:")))).toEqual([])
  })

  it("what @lm/api and the client's main entry reach loads no node: module", () => {
    const entries: Record<string, string> = {
      "@lm/client": "packages/client/src/index.ts",
      "@lm/api": "packages/api/src/index.ts",
      "@lm/api/wire": "packages/api/src/wire/Wire.ts",
      "@lm/domain/core": "packages/domain/src/core.ts",
      "@lm/domain/verify": "packages/domain/src/verify/index.ts"
    }
    const seen = new Set<string>()
    const reached: Array<string> = []
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const specifier of importsOf(file, { runtimeOnly: true })) {
        if (specifier.startsWith(".")) visit(sourceOf(file, specifier))
        else if (specifier.startsWith("@lm/")) {
          const entry = entries[specifier]
          if (entry === undefined) reached.push(`${relative(root, file)} imports ${specifier}, which is not a browser-safe entry`)
          else visit(join(root, entry))
        } else if (specifier.startsWith("node:")) reached.push(`${relative(root, file)} imports ${specifier}`)
      }
    }
    visit(join(root, entries["@lm/api"]!))
    visit(join(root, entries["@lm/client"]!))
    expect(seen).toContain(join(root, "packages/api/src/Api.ts"))
    expect(reached).toEqual([])
  })

  it("no package has an import cycle among its modules", () => {
    expect(Object.values(workspaces).flatMap((dir) => cyclesIn(dir).map((cycle) => `${dir}: ${cycle}`))).toEqual([])
  })

  it("the console imports the API definition in one module (src/api.ts), and no node: module", () => {
    const consoleFiles = sources(join(root, "apps/console/src"))
    const importers = (test: (specifier: string) => boolean) =>
      consoleFiles.filter((file) => importsOf(file).some(test)).map((file) => relative(root, file))
    expect(consoleFiles.length).toBeGreaterThan(5)
    expect(importers((s) => s.startsWith("@lm/http") || s === "@lm/api")).toEqual(["apps/console/src/api.ts"])
    expect(importers((s) => s.startsWith("node:"))).toEqual([])
  })
})
