import { describe, expect, it } from "vitest"
import { version } from "@lm/domain"

describe("workspace", () => {
  it("resolves the domain package through the workspace", () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+$/)
  })
  it("runs on Node 22.19 or newer", () => {
    const [major, minor] = process.versions.node.split(".").map(Number)
    expect(major! > 22 || (major === 22 && minor! >= 19)).toBe(true)
  })
})
