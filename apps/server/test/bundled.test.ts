/**
 * When `lm` runs its bundle (`src/bin/bundled.ts`): only while every build it was made from is unchanged; with no
 * bundle, a broken stamp, or a package built again after bundling, it runs `dist/` (never an older build).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { currentBundle, stampFile, stampHolds, stampOf, writeStamp } from "../src/bin/bundled.js"

let root: string
const bundleDir = () => pathToFileURL(join(root, "apps/server/dist/bundle/"))
const current = () => currentBundle(bundleDir(), pathToFileURL(`${root}/`))

/** A repository with two built packages and a bundle stamped with their builds. */
const setUp = () => {
  root = mkdtempSync(join(tmpdir(), "lm-bundled-"))
  const builtFrom: Record<string, number> = {}
  for (const workspace of ["packages/domain", "apps/server"]) {
    mkdirSync(join(root, workspace), { recursive: true })
    const info = join(root, workspace, "tsconfig.tsbuildinfo")
    writeFileSync(info, "{}")
    builtFrom[`${workspace}/tsconfig.tsbuildinfo`] = statSync(info).mtimeMs
  }
  mkdirSync(join(root, "apps/server/dist/bundle"), { recursive: true })
  writeFileSync(join(root, "apps/server/dist/bundle", stampFile), JSON.stringify({ builtFrom }))
}

describe("lm's bundle", () => {
  beforeEach(setUp)
  afterEach(() => rmSync(root, { recursive: true, force: true }))

  it("is run while every package it was bundled from is as built then", () => {
    expect(current()?.href).toBe(new URL("run.js", bundleDir()).href)
  })

  it("is not run once a package it was bundled from is built again", () => {
    const info = join(root, "packages/domain/tsconfig.tsbuildinfo")
    const later = new Date(statSync(info).mtimeMs + 5_000)
    utimesSync(info, later, later)
    expect(current()).toBeUndefined()
  })

  it("is not run when a package it was bundled from is gone, or the stamp is missing, empty or broken", () => {
    rmSync(join(root, "apps/server/tsconfig.tsbuildinfo"))
    expect(current()).toBeUndefined()
    for (const stamp of [undefined, "{\"builtFrom\":{}}", "{}", "not json", "null"]) {
      setUp()
      const file = join(root, "apps/server/dist/bundle", stampFile)
      if (stamp === undefined) rmSync(file)
      else writeFileSync(file, stamp)
      expect(current(), String(stamp)).toBeUndefined()
    }
  })

  it("stamps the files that exist, and the stamp holds until one of them changes or goes", () => {
    const rootUrl = pathToFileURL(`${root}/`)
    const stamp = stampOf(["packages/domain/tsconfig.tsbuildinfo", "apps/server/tsconfig.tsbuildinfo", "not/there.json"], rootUrl)
    expect(Object.keys(stamp.builtFrom)).toEqual(["packages/domain/tsconfig.tsbuildinfo", "apps/server/tsconfig.tsbuildinfo"])
    const file = pathToFileURL(join(root, "other.stamp.json"))
    writeStamp(file, stamp)
    expect(stampHolds(file, rootUrl)).toBe(true)
    rmSync(join(root, "apps/server/tsconfig.tsbuildinfo"))
    expect(stampHolds(file, rootUrl)).toBe(false)
  })
})

