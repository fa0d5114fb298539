/** The tests run on a Node.js the workspace supports (`engines.node` of the root package.json). */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

describe("workspace", () => {
  it("runs on the Node.js version package.json requires", () => {
    const engines = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).engines.node as string
    const required = /^>=(\d+)\.(\d+)$/.exec(engines)
    expect(required, `engines.node is ${engines}`).not.toBeNull()
    const [major, minor] = process.versions.node.split(".").map(Number)
    const [needMajor, needMinor] = [Number(required![1]), Number(required![2])]
    expect(major! > needMajor || (major === needMajor && minor! >= needMinor), `Node ${process.versions.node}, needs ${engines}`).toBe(true)
  })
})
