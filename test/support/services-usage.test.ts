/**
 * Every test reads DATABASE_URL and REDIS_URL through `serviceUrl` (services.ts), so that none of them skips in
 * CI for want of its service: a `process.env.DATABASE_URL` read of its own would skip silently there.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === "node_modules" || name === "dist" || name === "fixtures") return []
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

const testFolders = [
  join(root, "test"),
  ...readdirSync(join(root, "packages")).map((pkg) => join(root, "packages", pkg, "test")),
  ...readdirSync(join(root, "apps")).map((app) => join(root, "apps", app, "test"))
].filter((dir) => { try { return statSync(dir).isDirectory() } catch { return false } })

const ownReads = /process\.env\.(DATABASE_URL|REDIS_URL)\b|process\.env\[["'](DATABASE_URL|REDIS_URL)["']\]/

it("no test reads DATABASE_URL or REDIS_URL but through serviceUrl", () => {
  const all = testFolders.flatMap(files)
  expect(all.some((file) => file.endsWith(join("test", "support", "services.ts")))).toBe(true)
  const offending = all
    .filter((file) => !file.endsWith(join("test", "support", "services.ts")) && !file.endsWith("services-usage.test.ts"))
    .filter((file) => ownReads.test(readFileSync(file, "utf8")))
    .map((file) => relative(root, file))
  expect(offending, "read it with serviceUrl(\"DATABASE_URL\") from test/support/services.ts").toEqual([])
})
