/**
 * The README's embedding example is `examples/embedding.ts`, word for word: `npm test` type-checks it (it is in
 * tsconfig.test.json) and this test runs it as a user would, with Node on the built packages.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..")
const example = join(root, "examples", "embedding.ts")

describe("the README's embedding example", () => {
  it("is examples/embedding.ts", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
    expect(blocks).toContain(readFileSync(example, "utf8"))
  })

  it("runs and prints the validation code", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [example], { cwd: root, timeout: 60_000 })
    expect(stdout.trim()).toBe("valid")
  })
})
