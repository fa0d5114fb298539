/**
 * Each list of names (overage strategies, statuses, scopes, component kinds, ...) is written once, as a named
 * tuple: in the model of the domain feature that owns the fact (the wire schemas, settings and CLI refer to it),
 * or next to the one place that owns it. A `Literals([...])` with an inline array is a second copy in the making.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")

const sources = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : []
  })

const packageSources = readdirSync(join(root, "packages")).flatMap((pkg) => sources(join(root, "packages", pkg, "src")))

/** The arguments of every `Literals(` call (Schema or Config) in a file, up to its first comma or parenthesis. */
const literalsArguments = (file: string): Array<string> =>
  [...readFileSync(file, "utf8").matchAll(/\bLiterals\(\s*([^,)]*)/g)].map((match) => match[1]!.trim())

describe("literal lists", () => {
  it("finds the Literals calls it checks (the scanner works)", () => {
    expect(literalsArguments(join(root, "packages/domain/src/licensing/model.ts"))).toContain("overageStrategies")
    expect(literalsArguments(join(root, "packages/api/src/groups/Client.ts"))).toContain("Validation.validationCodes")
  })

  it("every Literals call takes a named list, never an inline array", () => {
    const inline = packageSources.flatMap((file) =>
      literalsArguments(file).filter((argument) => argument.startsWith("[")).map(() => relative(root, file))
    )
    expect(inline).toEqual([])
  })
})
