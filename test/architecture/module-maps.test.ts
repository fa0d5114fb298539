/**
 * Each package's README has a "Module map": a table whose first column names, in backticks, paths relative to the
 * package's folder (`src/Engine.ts`, `src/shared/`). Every path named there exists (a folder when it ends in `/`),
 * and every module and folder at the top of the package's `src/` is named, so that a map cannot rot: a file moved,
 * renamed, removed or added without its line fails here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")

/** Every package of the workspace (the root package.json's `workspaces`): a new one needs its map too. */
const packages: ReadonlyArray<string> = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).workspaces

/** The paths the first column of the README's module map names (empty when it has none). */
const mapPaths = (readme: string): Array<string> => {
  const section = readme.split(/^## /m).find((part) => part.startsWith("Module map\n")) ?? ""
  return section.split("\n")
    .filter((line) => line.startsWith("|") && !/^\|\s*-/.test(line))
    .slice(1) // the header row
    .flatMap((line) => [...(line.split("|")[1] ?? "").matchAll(/`([^`]+)`/g)].map((match) => match[1]!))
}

describe("each package README's module map", () => {
  it("is there, as a table, in every package", () => {
    expect(packages.length).toBeGreaterThanOrEqual(8)
    expect(packages.filter((dir) => mapPaths(readFileSync(join(root, dir, "README.md"), "utf8")).length === 0)).toEqual([])
  })

  for (const dir of packages) {
    describe(dir, () => {
      const named = mapPaths(readFileSync(join(root, dir, "README.md"), "utf8"))

      it("names only paths that exist", () => {
        const missing = named.filter((path) => {
          const full = join(root, dir, path)
          return !existsSync(full) || (path.endsWith("/") && !statSync(full).isDirectory())
        })
        expect(missing).toEqual([])
      })

      it("names every module and folder at the top of src/", () => {
        const names = new Set(named.map((path) => path.replace(/\/$/, "")))
        const unnamed = readdirSync(join(root, dir, "src")).map((entry) => `src/${entry}`).filter((path) => !names.has(path))
        expect(unnamed).toEqual([])
      })
    })
  }
})
